package metalsim

import (
	"net/http"
	"testing"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCreateDeviceReturnsQueuedDevice(t *testing.T) {
	e := newEnv(t)
	in := ipxeInput("node-1")
	in.Description = ptr("harvester node")
	in.ProjectSshKeys = []string{"0b8f0bd4-1e6e-4c0e-9d8a-2f8d4b6a7c01"}
	in.Customdata = map[string]interface{}{"pool": "a"}

	d := e.create(in)

	assert.Equal(t, metalv1.DEVICESTATE_QUEUED, d.GetState())
	assert.Equal(t, "node-1", d.GetHostname())
	assert.Equal(t, "harvester node", d.GetDescription())
	assert.Equal(t, []string{"harvester-equinix-addon", "pool:node-1"}, d.Tags)
	assert.Equal(t, "hourly", d.GetBillingCycle())
	assert.Equal(t, testIPXEURL, d.GetIpxeScriptUrl())
	assert.False(t, d.GetAlwaysPxe())
	assert.Equal(t, "#cloud-config\nhostname: node-1\n", d.GetUserdata())
	assert.Equal(t, OSCustomIPXE, d.OperatingSystem.GetSlug())
	assert.Equal(t, "/metal/v1/devices/"+d.GetId(), d.GetHref())
	assert.Equal(t, d.GetId()[:8], d.GetShortId())
	assert.Equal(t, testStart, d.GetCreatedAt())
	assert.Equal(t, "/metal/v1/ssh-keys/0b8f0bd4-1e6e-4c0e-9d8a-2f8d4b6a7c01", d.SshKeys[0].Href)
	assert.Equal(t, "a", d.Customdata["pool"])
	assert.Len(t, d.NetworkPorts, 3)
	assert.Len(t, d.IpAddresses, 3)
	assert.InDelta(t, 0, d.GetProvisioningPercentage(), 0.001)
	for _, p := range d.NetworkPorts {
		assert.False(t, p.Data.HasMac(), "a queued device has no hardware yet, so no MACs")
	}
}

// A plain read carries plan, metro and facility in full, as the Equinix CCM
// relied on; project and hardware reservation stay references unless
// included, and exclude reduces an object to its href.
func TestDeviceReadNestedObjects(t *testing.T) {
	e := newEnv(t)
	d := e.create(ipxeInput("node-1"))
	second := e.create(ipxeInput("node-2"))

	bare := e.get(d.GetId())
	assert.Equal(t, "/metal/v1/projects/"+testProject, bare.Project.GetHref())
	assert.Empty(t, bare.Project.GetId())
	assert.Equal(t, "c3.small.x86", bare.Plan.GetSlug())
	assert.Equal(t, "c3.small.x86", bare.Plan.GetClass())
	specs := bare.Plan.Specs
	require.NotNil(t, specs)
	assert.Equal(t, int32(1), specs.Cpus[0].GetCount())
	assert.Equal(t, "Intel Xeon E-2278G 8-Core Processor @ 3.40GHz", specs.Cpus[0].GetType())
	assert.Equal(t, "32GB", specs.Memory.GetTotal())
	assert.Equal(t, "480GB", specs.Drives[0].GetSize())
	assert.Equal(t, "boot", specs.Drives[0].GetCategory())
	assert.Equal(t, int32(2), specs.Nics[0].GetCount())
	assert.True(t, specs.Features.GetUefi())
	assert.Equal(t, "da", bare.Metro.GetCode())
	assert.Equal(t, "da11", bare.Facility.GetCode())
	assert.Equal(t, "da", bare.Facility.Metro.GetCode(), "the facility lies in the device's metro")
	assert.Equal(t, "da6", e.get(second.GetId()).Facility.GetCode(), "devices are spread over the metro's facilities")

	full := e.get(d.GetId(), "project")
	assert.Equal(t, testProject, full.Project.GetId())

	excluded, _, err := e.client.DevicesApi.FindDeviceById(e.ctx, d.GetId()).
		Exclude([]string{"ip_addresses", "plan", "metro", "facility", "operating_system"}).Execute()
	require.NoError(t, err)
	assert.Empty(t, excluded.IpAddresses)
	assert.Empty(t, excluded.Plan.GetSlug(), "an excluded object is reduced to its href")
	assert.Contains(t, excluded.Plan.AdditionalProperties["href"], "/metal/v1/plans/")
	assert.Empty(t, excluded.Metro.GetCode())
	assert.Contains(t, excluded.Metro.AdditionalProperties["href"], "/metal/v1/locations/metros/")
	assert.Empty(t, excluded.Facility.GetCode())
	assert.Contains(t, excluded.Facility.AdditionalProperties["href"], "/metal/v1/facilities/")
	assert.Empty(t, excluded.OperatingSystem.GetSlug())
}

func TestCreateDeviceValidation(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*metalv1.DeviceCreateInMetroInput)
		want   string
	}{
		{"custom_ipxe without script", func(in *metalv1.DeviceCreateInMetroInput) { in.IpxeScriptUrl = nil }, "ipxe_script_url or userdata starting with #!ipxe"},
		{"script url and ipxe userdata", func(in *metalv1.DeviceCreateInMetroInput) { in.Userdata = ptr("#!ipxe\nchain http://x") }, "must not be an iPXE script"},
		{"script url without custom_ipxe", func(in *metalv1.DeviceCreateInMetroInput) { in.OperatingSystem = "ubuntu_22_04" }, "only valid with the custom_ipxe"},
		{"script url not http", func(in *metalv1.DeviceCreateInMetroInput) { in.IpxeScriptUrl = ptr("ftp://x/y") }, "http or https URL"},
		{"unknown plan", func(in *metalv1.DeviceCreateInMetroInput) { in.Plan = "z9.huge" }, "Plan z9.huge is not valid"},
		{"unknown metro", func(in *metalv1.DeviceCreateInMetroInput) { in.Metro = "zz" }, "Metro zz is not valid"},
		{"unknown os", func(in *metalv1.DeviceCreateInMetroInput) { in.OperatingSystem = "windows_3_11" }, "Operating system windows_3_11 is not valid"},
		{"invalid hostname", func(in *metalv1.DeviceCreateInMetroInput) { in.Hostname = ptr("bad_host!") }, "Hostname is invalid, bad_host!"},
		{"invalid billing cycle", func(in *metalv1.DeviceCreateInMetroInput) {
			in.BillingCycle = ptr(metalv1.DeviceCreateInputBillingCycle("weekly"))
		}, "not a valid DeviceCreateInputBillingCycle"},
		{"spot without price", func(in *metalv1.DeviceCreateInMetroInput) { in.SpotInstance = ptr(true) }, "Spot price max"},
		{"no private ipv4", func(in *metalv1.DeviceCreateInMetroInput) {
			in.IpAddresses = []metalv1.IPAddress{{AddressFamily: ptr(metalv1.IPADDRESSADDRESSFAMILY__4), Public: ptr(true)}}
		}, "private IPv4 address is required"},
		{"unknown hardware reservation", func(in *metalv1.DeviceCreateInMetroInput) {
			in.HardwareReservationId = ptr("0b8f0bd4-1e6e-4c0e-9d8a-2f8d4b6a7c01")
		}, "is not a valid hardware reservation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			in := ipxeInput("node-1")
			tt.mutate(&in)
			_, resp, err := e.client.DevicesApi.CreateDevice(e.ctx, testProject).
				CreateDeviceRequest(metalv1.CreateDeviceRequest{DeviceCreateInMetroInput: &in}).Execute()
			apiErr := apiErrorOf(t, resp, err, http.StatusUnprocessableEntity, tt.want)
			assert.NotEmpty(t, modelMessages(t, apiErr))
			assert.Empty(t, e.sim.Devices(testProject))
		})
	}
}

func TestCreateDeviceWithIPXEUserdataAndNoURL(t *testing.T) {
	e := newEnv(t)
	in := ipxeInput("node-1")
	in.IpxeScriptUrl = nil
	in.Userdata = ptr("#!ipxe\nchain https://boot.example.com/x.ipxe\n")
	d := e.create(in)
	assert.Empty(t, d.GetIpxeScriptUrl())
}

func TestCustomIPXEDeviceBecomesActiveWhenScriptIsHandedOut(t *testing.T) {
	e := newEnv(t)
	tm := DefaultTimings()
	d := e.create(ipxeInput("node-1"))

	e.clock.Advance(tm.Queue)
	got := e.get(d.GetId())
	assert.Equal(t, metalv1.DEVICESTATE_PROVISIONING, got.GetState())
	assert.True(t, e.port(got, "eth0").Data.HasMac(), "MACs appear once hardware is picked")

	e.clock.Advance(tm.IPXEBoot / 2)
	got = e.get(d.GetId())
	assert.InDelta(t, 50, got.GetProvisioningPercentage(), 1)

	e.clock.Advance(tm.IPXEBoot / 2)
	got = e.get(d.GetId())
	assert.Equal(t, metalv1.DEVICESTATE_ACTIVE, got.GetState())
	assert.False(t, got.HasProvisioningPercentage())

	events, err := e.sim.DeviceEvents(d.GetId())
	require.NoError(t, err)
	var types []string
	for _, ev := range events {
		types = append(types, ev.GetType())
	}
	assert.Equal(t, []string{EventActive, EventIPXEHandedOut, EventProvisioning, EventCreated}, types)
	assert.Equal(t, "node-1 is active", events[0].GetInterpolated())
	assert.Equal(t, "{{ device }} is active", events[0].GetBody())
}

func TestRegularOSTakesTheFullProvisionTime(t *testing.T) {
	e := newEnv(t)
	tm := DefaultTimings()
	in := ipxeInput("node-1")
	in.OperatingSystem = "ubuntu_24_04"
	in.IpxeScriptUrl = nil
	d := e.create(in)

	e.clock.Advance(tm.Queue + tm.IPXEBoot)
	assert.Equal(t, metalv1.DEVICESTATE_PROVISIONING, e.get(d.GetId()).GetState())
	e.clock.Advance(tm.Provision - tm.IPXEBoot)
	assert.Equal(t, metalv1.DEVICESTATE_ACTIVE, e.get(d.GetId()).GetState())
}

func TestZeroTimingsCompleteOnNextAccess(t *testing.T) {
	e := newEnv(t, withTimings(Timings{}))
	d := e.create(ipxeInput("node-1"))
	assert.Equal(t, metalv1.DEVICESTATE_QUEUED, d.GetState())
	assert.Equal(t, metalv1.DEVICESTATE_ACTIVE, e.get(d.GetId()).GetState())
}

func TestUpdateDevice(t *testing.T) {
	e := newEnv(t)
	d := e.createActive("node-1")
	in := metalv1.DeviceUpdateInput{
		AlwaysPxe:     ptr(true),
		BillingCycle:  ptr("monthly"),
		Customdata:    map[string]interface{}{"k": "v"},
		Description:   ptr("updated"),
		Hostname:      ptr("node-1b"),
		IpxeScriptUrl: ptr("https://boot.example.com/other.ipxe"),
		Locked:        ptr(true),
		NetworkFrozen: ptr(true),
		SpotInstance:  ptr(false),
		Tags:          []string{"x"},
		Userdata:      ptr("#cloud-config\n"),
	}
	e.clock.Advance(1e9)
	got, resp, err := e.client.DevicesApi.UpdateDevice(e.ctx, d.GetId()).DeviceUpdateInput(in).Execute()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, got.GetAlwaysPxe())
	assert.Equal(t, "monthly", got.GetBillingCycle())
	assert.Equal(t, "v", got.Customdata["k"])
	assert.Equal(t, "updated", got.GetDescription())
	assert.Equal(t, "node-1b", got.GetHostname())
	assert.Equal(t, "https://boot.example.com/other.ipxe", got.GetIpxeScriptUrl())
	assert.True(t, got.GetLocked())
	assert.True(t, got.GetNetworkFrozen())
	assert.Equal(t, []string{"x"}, got.Tags)
	assert.Equal(t, "#cloud-config\n", got.GetUserdata())
	assert.True(t, got.GetUpdatedAt().After(got.GetCreatedAt()))

	t.Run("clearing tags", func(t *testing.T) {
		got, _, err := e.client.DevicesApi.UpdateDevice(e.ctx, d.GetId()).
			DeviceUpdateInput(metalv1.DeviceUpdateInput{Tags: []string{}}).Execute()
		require.NoError(t, err)
		assert.Empty(t, got.Tags)
	})
	t.Run("invalid hostname", func(t *testing.T) {
		_, resp, err := e.client.DevicesApi.UpdateDevice(e.ctx, d.GetId()).
			DeviceUpdateInput(metalv1.DeviceUpdateInput{Hostname: ptr("-bad-")}).Execute()
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "Hostname is invalid")
	})
	t.Run("ipxe userdata next to a script url", func(t *testing.T) {
		_, resp, err := e.client.DevicesApi.UpdateDevice(e.ctx, d.GetId()).
			DeviceUpdateInput(metalv1.DeviceUpdateInput{Userdata: ptr("#!ipxe\nexit")}).Execute()
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "must not be an iPXE script")
	})
}

func TestDeleteDevice(t *testing.T) {
	tm := DefaultTimings()
	t.Run("refused while provisioning", func(t *testing.T) {
		e := newEnv(t)
		d := e.create(ipxeInput("node-1"))
		resp, err := e.client.DevicesApi.DeleteDevice(e.ctx, d.GetId()).Execute()
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "Cannot delete a device while it is provisioning")
		e.clock.Advance(tm.Queue)
		resp, err = e.client.DevicesApi.DeleteDevice(e.ctx, d.GetId()).ForceDelete(true).Execute()
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "while it is provisioning")
	})
	t.Run("refused while locked", func(t *testing.T) {
		e := newEnv(t)
		d := e.createActive("node-1", func(in *metalv1.DeviceCreateInMetroInput) { in.Locked = ptr(true) })
		resp, err := e.client.DevicesApi.DeleteDevice(e.ctx, d.GetId()).Execute()
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "locked")
	})
	t.Run("deprovisions then disappears", func(t *testing.T) {
		e := newEnv(t)
		d := e.createActive("node-1")
		resp, err := e.client.DevicesApi.DeleteDevice(e.ctx, d.GetId()).ForceDelete(true).Execute()
		require.NoError(t, err)
		assert.Equal(t, http.StatusNoContent, resp.StatusCode)
		assert.Equal(t, metalv1.DEVICESTATE_DEPROVISIONING, e.get(d.GetId()).GetState())

		resp, err = e.client.DevicesApi.DeleteDevice(e.ctx, d.GetId()).Execute()
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "deprovisioning")

		e.clock.Advance(tm.Deprovision)
		_, resp, err = e.client.DevicesApi.FindDeviceById(e.ctx, d.GetId()).Execute()
		apiErr := apiErrorOf(t, resp, err, http.StatusNotFound, "Not found")
		assert.Equal(t, []string{"Not found"}, modelMessages(t, apiErr))
		assert.Empty(t, e.sim.Devices(testProject))
	})
	t.Run("failed device can be deleted", func(t *testing.T) {
		e := newEnv(t)
		e.sim.InjectFault(Fault{Kind: FaultProvisionFailure})
		d := e.create(ipxeInput("node-1"))
		e.clock.Advance(tm.Queue + tm.IPXEBoot)
		assert.Equal(t, metalv1.DEVICESTATE_FAILED, e.get(d.GetId()).GetState())
		_, err := e.client.DevicesApi.DeleteDevice(e.ctx, d.GetId()).Execute()
		require.NoError(t, err)
	})
}

func TestHardwareReservations(t *testing.T) {
	e := newEnv(t)
	tm := DefaultTimings()
	resID, err := e.sim.AddHardwareReservation(testProject, "c3.small.x86", "da")
	require.NoError(t, err)

	d := e.createActive("node-1", func(in *metalv1.DeviceCreateInMetroInput) { in.HardwareReservationId = ptr("next-available") })
	assert.Equal(t, "/metal/v1/hardware-reservations/"+resID, d.HardwareReservation.GetHref())
	full := e.get(d.GetId(), "hardware_reservation")
	assert.Equal(t, resID, full.HardwareReservation.GetId())
	assert.False(t, full.HardwareReservation.GetProvisionable())

	in := ipxeInput("node-2")
	in.HardwareReservationId = ptr(resID)
	_, resp, err := e.client.DevicesApi.CreateDevice(e.ctx, testProject).
		CreateDeviceRequest(metalv1.CreateDeviceRequest{DeviceCreateInMetroInput: &in}).Execute()
	requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "not provisionable")

	_, err = e.client.DevicesApi.DeleteDevice(e.ctx, d.GetId()).Execute()
	require.NoError(t, err)
	e.clock.Advance(tm.Deprovision)
	_, resp, err = e.client.DevicesApi.CreateDevice(e.ctx, testProject).
		CreateDeviceRequest(metalv1.CreateDeviceRequest{DeviceCreateInMetroInput: &in}).Execute()
	requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "not provisionable")

	e.clock.Advance(tm.ReservationRelease)
	e.create(in)
}

func TestDeviceEventsArePaginatedNewestFirst(t *testing.T) {
	e := newEnv(t)
	d := e.createActive("node-1")
	for i := range 12 {
		require.NoError(t, e.sim.AddDeviceEvent(d.GetId(), "harvester.install", "{{ device }} install step "+string(rune('a'+i))))
	}
	page, resp, err := e.client.EventsApi.FindDeviceEvents(e.ctx, d.GetId()).PerPage(5).Execute()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Len(t, page.Events, 5)
	assert.Equal(t, int32(4), page.Meta.GetLastPage())
	assert.Equal(t, int32(16), page.Meta.GetTotal())
	assert.Equal(t, "node-1 install step l", page.Events[0].GetInterpolated())

	all, err := e.client.EventsApi.FindDeviceEvents(e.ctx, d.GetId()).PerPage(5).ExecuteWithPagination()
	require.NoError(t, err)
	require.Len(t, all.Events, 16)
	assert.Equal(t, EventCreated, all.Events[15].GetType())
	assert.Equal(t, "/metal/v1/devices/"+d.GetId(), all.Events[0].Relationships[0].Href)
}
