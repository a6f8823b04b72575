package metalsim

import (
	"net/http"
	"testing"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (e *env) createIn(in metalv1.DeviceCreateInMetroInput) (*metalv1.Device, *http.Response, error) {
	return e.client.DevicesApi.CreateDevice(e.ctx, testProject).
		CreateDeviceRequest(metalv1.CreateDeviceRequest{DeviceCreateInMetroInput: &in}).Execute()
}

func reserved(hostname, reservation string) metalv1.DeviceCreateInMetroInput {
	in := ipxeInput(hostname)
	in.HardwareReservationId = ptr(reservation)
	return in
}

func TestHardwareReservationReads(t *testing.T) {
	e := newEnv(t)
	small, err := e.sim.AddHardwareReservations(testProject, HardwareReservation{Plan: "c3.small.x86", Metro: "da"}, 3)
	require.NoError(t, err)
	spare, err := e.sim.AddHardwareReservations(testProject, HardwareReservation{Plan: "c3.small.x86", Facility: "da6", Spare: true}, 1)
	require.NoError(t, err)
	ny, err := e.sim.AddHardwareReservation(testProject, "m3.large.x86", "ny")
	require.NoError(t, err)
	_, err = e.sim.AddHardwareReservation(otherProject, "c3.small.x86", "da")
	require.NoError(t, err)
	d := e.createActive("node-1", func(in *metalv1.DeviceCreateInMetroInput) { *in = reserved("node-1", small[1]) })
	hr := e.client.HardwareReservationsApi

	page, _, err := hr.FindProjectHardwareReservations(e.ctx, testProject).PerPage(2).Execute()
	require.NoError(t, err)
	assert.Equal(t, int32(3), page.Meta.GetLastPage())
	assert.Equal(t, int32(5), page.Meta.GetTotal())
	all, err := hr.FindProjectHardwareReservations(e.ctx, testProject).PerPage(2).ExecuteWithPagination()
	require.NoError(t, err)
	require.Len(t, all.HardwareReservations, 5)
	var ids []string
	for _, r := range all.HardwareReservations {
		ids = append(ids, r.GetId())
	}
	assert.Equal(t, append(append(small, spare...), ny), ids, "creation order")

	first := all.HardwareReservations[0]
	assert.Equal(t, small[0][:8], first.GetShortId())
	assert.Equal(t, "/metal/v1/hardware-reservations/"+small[0], first.GetHref())
	assert.Equal(t, "c3.small.x86", first.Plan.GetSlug())
	assert.Equal(t, "32GB", first.Plan.Specs.Memory.GetTotal())
	assert.Equal(t, "da11", first.Facility.GetCode())
	assert.Equal(t, "da", first.Facility.Metro.GetCode())
	assert.True(t, first.GetProvisionable())
	assert.False(t, first.GetSpare())
	assert.Len(t, first.GetSwitchUuid(), 8)
	assert.Nil(t, first.Device)
	used := all.HardwareReservations[1]
	assert.False(t, used.GetProvisionable())
	assert.Equal(t, "/metal/v1/devices/"+d.GetId(), used.Device.GetHref())
	assert.Equal(t, "da6", all.HardwareReservations[3].Facility.GetCode())
	assert.True(t, all.HardwareReservations[3].GetSpare())
	assert.False(t, all.HardwareReservations[3].GetProvisionable(), "a spare is not provisionable")

	filtered := func(r metalv1.ApiFindProjectHardwareReservationsRequest) []string {
		t.Helper()
		list, _, err := r.Execute()
		require.NoError(t, err)
		var out []string
		for _, x := range list.HardwareReservations {
			out = append(out, x.GetId())
		}
		return out
	}
	assert.Equal(t, []string{small[0], small[2], ny}, filtered(hr.FindProjectHardwareReservations(e.ctx, testProject).
		Provisionable(metalv1.FINDPROJECTHARDWARERESERVATIONSPROVISIONABLEPARAMETER_ONLY)))
	assert.Equal(t, spare, filtered(hr.FindProjectHardwareReservations(e.ctx, testProject).
		State(metalv1.FINDPROJECTHARDWARERESERVATIONSSTATEPARAMETER_SPARE)))
	assert.Equal(t, []string{small[1]}, filtered(hr.FindProjectHardwareReservations(e.ctx, testProject).Query("node-1")))
	assert.Equal(t, []string{ny}, filtered(hr.FindProjectHardwareReservations(e.ctx, testProject).Query(ny[:8])))

	one, _, err := hr.FindHardwareReservationById(e.ctx, small[1]).Include([]string{"device"}).Execute()
	require.NoError(t, err)
	assert.Equal(t, "node-1", one.Device.GetHostname())
	_, resp, err := e.other.HardwareReservationsApi.FindHardwareReservationById(e.ctx, small[0]).Execute()
	requireAPIError(t, resp, err, http.StatusForbidden, "not authorized")
	_, resp, err = hr.FindHardwareReservationById(e.ctx, "00000000-0000-4000-8000-000000000000").Execute()
	requireAPIError(t, resp, err, http.StatusNotFound, "")
}

func TestCreatesOnHardwareReservations(t *testing.T) {
	e := newEnv(t)
	tm := DefaultTimings()
	da, err := e.sim.AddHardwareReservations(testProject, HardwareReservation{Plan: "c3.small.x86", Metro: "da"}, 2)
	require.NoError(t, err)
	spare, err := e.sim.AddHardwareReservations(testProject, HardwareReservation{Plan: "c3.small.x86", Metro: "da", Spare: true}, 1)
	require.NoError(t, err)
	large, err := e.sim.AddHardwareReservation(testProject, "m3.large.x86", "da")
	require.NoError(t, err)
	foreign, err := e.sim.AddHardwareReservation(otherProject, "c3.small.x86", "da")
	require.NoError(t, err)
	first := e.createActive("node-1", func(in *metalv1.DeviceCreateInMetroInput) { *in = reserved("node-1", da[0]) })
	assert.Equal(t, "da11", first.Facility.GetCode(), "the device lands in its reservation's facility")

	refused := []struct {
		name string
		in   metalv1.DeviceCreateInMetroInput
		want string
	}{
		{"in use", reserved("node-2", da[0]), "is not provisionable: it is in use by node-1"},
		{"another plan", reserved("node-2", large), "is for plan m3.large.x86, not c3.small.x86"},
		{"another metro", func() metalv1.DeviceCreateInMetroInput {
			in := reserved("node-2", da[1])
			in.Metro = "ny"
			return in
		}(), "is in facility da6 of metro da, not in metro ny"},
		{"a spare", reserved("node-2", spare[0]), "is a spare"},
		{"another project's", reserved("node-2", foreign), foreign + " is not a valid hardware reservation"},
		{"a short ID", reserved("node-2", da[1][:8]), "is not a valid hardware reservation"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			_, resp, err := e.createIn(tc.in)
			apiErr := apiErrorOf(t, resp, err, http.StatusUnprocessableEntity, tc.want)
			assert.Len(t, modelMessages(t, apiErr), 1)
		})
	}

	next := e.create(reserved("node-2", "next-available"))
	got := e.get(next.GetId(), "hardware_reservation")
	assert.Equal(t, da[1], got.HardwareReservation.GetId(), "next-available takes the free one of the plan in the metro")
	_, resp, err := e.createIn(reserved("node-3", "next-available"))
	requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "There are no available hardware reservations for selected plan and facility")

	_, err = e.client.DevicesApi.DeleteDevice(e.ctx, first.GetId()).Execute()
	require.NoError(t, err)
	e.clock.Advance(tm.Deprovision)
	r, _, err := e.client.HardwareReservationsApi.FindHardwareReservationById(e.ctx, da[0]).Execute()
	require.NoError(t, err)
	assert.False(t, r.GetProvisionable(), "a reservation comes back some minutes after its device is gone")
	assert.Nil(t, r.Device)
	_, resp, err = e.createIn(reserved("node-3", "next-available"))
	requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "no available hardware reservations")
	e.clock.Advance(tm.ReservationRelease)
	r, _, err = e.client.HardwareReservationsApi.FindHardwareReservationById(e.ctx, da[0]).Execute()
	require.NoError(t, err)
	assert.True(t, r.GetProvisionable())
	e.create(reserved("node-3", "next-available"))
}
