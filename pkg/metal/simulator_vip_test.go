package metal_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// What following the VIP host needs: find the reservation holding the VIP,
// keep its /32 on one device, move it.
func TestSimVIPFollowsItsHost(t *testing.T) {
	e := newSimEnv(t, metalsim.Timings{})
	d1 := e.activeDevice(t, "node-1")
	d2 := e.activeDevice(t, "node-2")
	const vip = "10.0.0.10"
	_, err := e.sim.AddIPReservation(simProject, metalsim.IPReservationSpec{CIDR: vip + "/32", Metro: "da", Tags: []string{"harvester-vip"}})
	require.NoError(t, err)

	list, err := e.client.ListIPReservations(e.ctx, metal.ListIPReservationsOptions{Types: []string{metal.IPReservationPublicIPv4}})
	require.NoError(t, err)
	var res *metal.IPReservation
	for i := range list {
		if list[i].Contains(vip) {
			res = &list[i]
		}
	}
	require.NotNil(t, res, "the reservation holding the VIP")
	assert.Equal(t, metal.IPReservationCreated, res.State)

	first, err := e.client.AssignIP(e.ctx, d1.ID, vip+"/32")
	require.NoError(t, err)
	assert.Equal(t, res.ID, first.ReservationID)
	assert.Equal(t, vip+"/32", first.ParentNetwork)

	again, err := e.client.AssignIP(e.ctx, d1.ID, vip)
	require.NoError(t, err, "already on this device is success")
	assert.Equal(t, first.ID, again.ID)
	assert.Equal(t, []int{201, 422}, statuses(e.sim.RequestsFor(metalsim.OpCreateIPAssignment)))

	_, err = e.client.AssignIP(e.ctx, d2.ID, vip)
	require.Error(t, err)
	assert.Equal(t, failure.Busy, failure.ClassOf(err), "on another device it must be unassigned first: %v", err)

	got, err := e.client.GetIP(e.ctx, first.ID)
	require.NoError(t, err)
	require.NotNil(t, got.Assignment)
	assert.Nil(t, got.Reservation)
	assert.Equal(t, d1.ID, got.Assignment.DeviceID)
	got, err = e.client.GetIP(e.ctx, res.ID)
	require.NoError(t, err)
	require.NotNil(t, got.Reservation)
	a, ok := got.Reservation.AssignmentOf(vip + "/32")
	require.True(t, ok)
	assert.Equal(t, first.ID, a.ID)

	// Move: unassign, then assign.
	require.NoError(t, e.client.UnassignIP(e.ctx, first.ID))
	assert.True(t, metal.IsNotFound(e.client.UnassignIP(e.ctx, first.ID)), "an assignment already gone")
	moved, err := e.client.AssignIP(e.ctx, d2.ID, vip)
	require.NoError(t, err)
	got, err = e.client.GetIP(e.ctx, res.ID)
	require.NoError(t, err)
	require.Len(t, got.Reservation.Assignments, 1, "never on two devices")
	assert.Equal(t, d2.ID, got.Reservation.Assignments[0].DeviceID)

	t.Run("an answer lost after the assignment was stored", func(t *testing.T) {
		require.NoError(t, e.client.UnassignIP(e.ctx, moved.ID))
		e.sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultDropConnection, Operations: []string{metalsim.OpCreateIPAssignment}, AfterStore: true, Count: 1})
		_, err := e.client.AssignIP(e.ctx, d1.ID, vip)
		require.Error(t, err)
		assert.Equal(t, failure.Transient, failure.ClassOf(err))
		retried, err := e.client.AssignIP(e.ctx, d1.ID, vip)
		require.NoError(t, err, "the retry finds the assignment in place")
		assert.Equal(t, d1.ID, retried.DeviceID)
	})

	t.Run("the assignment goes with its device", func(t *testing.T) {
		require.NoError(t, e.sim.DeleteDeviceOutOfBand(d1.ID))
		got, err := e.client.GetIPReservation(e.ctx, res.ID)
		require.NoError(t, err)
		assert.Empty(t, got.Assignments)
	})

	t.Run("faults are classified", func(t *testing.T) {
		e.sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultForbidden, Operations: []string{metalsim.OpFindIPAddressByID}, Count: 1})
		_, err := e.client.GetIP(e.ctx, res.ID)
		assert.Equal(t, failure.Forbidden, failure.ClassOf(err))
		e.sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultServerError, Status: 502, Operations: []string{metalsim.OpDeleteIPAddress}, Count: 1})
		err = e.client.UnassignIP(e.ctx, "3f1b6f9e-5e0c-4a43-9a57-0c4c7a1e2b3d")
		assert.Equal(t, failure.Transient, failure.ClassOf(err))
		_, err = e.client.GetIP(e.ctx, "3f1b6f9e-5e0c-4a43-9a57-0c4c7a1e2b3d")
		assert.True(t, metal.IsNotFound(err))
	})
}

func TestSimIPPoolBlocks(t *testing.T) {
	e := newSimEnv(t, metalsim.Timings{})
	d := e.activeDevice(t, "node-1")
	b30, err := e.client.ReserveIPs(e.ctx, metal.ReserveIPsRequest{Quantity: 4, Metro: "da", Tags: []string{"ippool:default"}})
	require.NoError(t, err)
	assert.Equal(t, 30, b30.CIDR)
	assert.Equal(t, metal.IPReservationCreated, b30.State)

	_, err = e.client.ReserveIPs(e.ctx, metal.ReserveIPsRequest{Quantity: 8, Metro: "da"})
	require.Error(t, err)
	assert.Equal(t, failure.Invalid, failure.ClassOf(err), "a /29 needs an approval: %v", err)

	b29, err := e.client.ReserveIPs(e.ctx, metal.ReserveIPsRequest{Quantity: 8, Metro: "da", WaitForApproval: true})
	require.NoError(t, err)
	assert.Equal(t, metal.IPReservationPending, b29.State)
	assert.Equal(t, 29, b29.CIDR)
	require.NoError(t, e.sim.ApproveIPReservation(b29.ID))
	got, err := e.client.GetIPReservation(e.ctx, b29.ID)
	require.NoError(t, err)
	assert.Equal(t, metal.IPReservationCreated, got.State)

	a, err := e.client.AssignIP(e.ctx, d.ID, b30.Address+"/32")
	require.NoError(t, err)
	require.NoError(t, e.client.ReleaseIPReservation(e.ctx, b30.ID), "an assigned block is released with its assignments")
	_, err = e.client.GetIP(e.ctx, a.ID)
	assert.True(t, metal.IsNotFound(err))
	ips, err := e.client.ListDeviceIPs(e.ctx, d.ID)
	require.NoError(t, err)
	assert.NotContains(t, addresses(ips), b30.Address)

	_, err = e.client.GetIPReservation(e.ctx, a.ID)
	assert.True(t, metal.IsNotFound(err))
}

func TestSimBGPSessions(t *testing.T) {
	e := newSimEnv(t, metalsim.Timings{})
	d := e.activeDevice(t, "node-1")
	require.NoError(t, e.client.CreateBGPConfig(e.ctx, metal.BGPConfigRequest{ASN: 65000, MD5: "Secret12345"}))
	cfg, err := e.client.GetBGPConfig(e.ctx)
	require.NoError(t, err)
	assert.True(t, cfg.Enabled())
	assert.Equal(t, redact.Sensitive("Secret12345"), cfg.MD5)
	assert.NotContains(t, fmt.Sprintf("%v %+v %#v", cfg, cfg, cfg), "Secret12345", "the password never prints")

	sessions, err := e.client.ListBGPSessions(e.ctx, d.ID)
	require.NoError(t, err)
	assert.Empty(t, sessions)
	require.NoError(t, e.client.CreateBGPSession(e.ctx, d.ID, metal.BGPSessionRequest{}))
	sessions, err = e.client.ListBGPSessions(e.ctx, d.ID)
	require.NoError(t, err)
	require.Len(t, sessions, 1)
	s := sessions[0]
	assert.Equal(t, "ipv4", s.AddressFamily)
	assert.Equal(t, d.ID, s.DeviceID)
	assert.Equal(t, "unknown", s.Status, "no routers attached")

	got, err := e.client.GetBGPSession(e.ctx, s.ID)
	require.NoError(t, err)
	assert.Equal(t, s.ID, got.ID)

	neighbors, err := e.client.ListBGPNeighbors(e.ctx, d.ID)
	require.NoError(t, err)
	require.Len(t, neighbors, 1)
	assert.Equal(t, redact.Sensitive("Secret12345"), neighbors[0].MD5Password)
	assert.Equal(t, d.PrivateIPv4(), neighbors[0].CustomerIP)

	e.sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultServerError, Operations: []string{metalsim.OpFindBgpSessions}, Count: 1})
	_, err = e.client.ListBGPSessions(e.ctx, d.ID)
	assert.Equal(t, failure.Transient, failure.ClassOf(err))

	require.NoError(t, e.client.DeleteBGPSession(e.ctx, s.ID))
	assert.True(t, metal.IsNotFound(e.client.DeleteBGPSession(e.ctx, s.ID)))
	_, err = e.client.GetBGPSession(e.ctx, s.ID)
	assert.True(t, metal.IsNotFound(err))
	sessions, err = e.client.ListBGPSessions(e.ctx, d.ID)
	require.NoError(t, err)
	assert.Empty(t, sessions)

	t.Run("sessions go with their device", func(t *testing.T) {
		require.NoError(t, e.client.CreateBGPSession(e.ctx, d.ID, metal.BGPSessionRequest{}))
		sessions, err := e.client.ListBGPSessions(e.ctx, d.ID)
		require.NoError(t, err)
		require.Len(t, sessions, 1)
		require.NoError(t, e.sim.DeleteDeviceOutOfBand(d.ID))
		_, err = e.client.GetBGPSession(e.ctx, sessions[0].ID)
		assert.True(t, metal.IsNotFound(err))
	})
}
