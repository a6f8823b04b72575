package metalsim

import (
	"net/http"
	"sync"
	"testing"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder collects notifications.
type recorder struct {
	mu sync.Mutex
	ns []Notification
}

func record(sim *Simulator) *recorder {
	r := &recorder{}
	sim.Subscribe(func(n Notification) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.ns = append(r.ns, n)
	})
	return r
}

func (r *recorder) of(typ NotificationType) []Notification {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Notification
	for _, n := range r.ns {
		if n.Type == typ {
			out = append(out, n)
		}
	}
	return out
}

func (e *env) action(id string, in metalv1.DeviceActionInput) (*http.Response, error) {
	return e.client.DevicesApi.PerformAction(e.ctx, id).DeviceActionInput(in).Execute()
}

func TestReinstallCycle(t *testing.T) {
	tm := DefaultTimings()
	tests := []struct {
		name          string
		preserve      bool
		fast          bool
		wantDuration  int64
		newScriptURL  string
		wantScriptURL string
	}{
		{"full wipe", false, false, int64(tm.DiskWipe + tm.IPXEBoot), "", testIPXEURL},
		{"preserve only still wipes", true, false, int64(tm.DiskWipe + tm.IPXEBoot), "", testIPXEURL},
		{"preserve and fast skip the wipe", true, true, int64(tm.IPXEBoot), "https://boot.example.com/v2.ipxe", "https://boot.example.com/v2.ipxe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			rec := record(e.sim)
			d := e.createActive("node-1")
			in := metalv1.DeviceActionInput{
				Type:            metalv1.DEVICEACTIONINPUTTYPE_REINSTALL,
				OperatingSystem: ptr(OSCustomIPXE),
				PreserveData:    ptr(tt.preserve),
				DeprovisionFast: ptr(tt.fast),
			}
			if tt.newScriptURL != "" {
				in.IpxeScriptUrl = ptr(tt.newScriptURL)
			}
			resp, err := e.action(d.GetId(), in)
			require.NoError(t, err)
			assert.Equal(t, http.StatusAccepted, resp.StatusCode)
			assert.Equal(t, int64(0), resp.ContentLength)
			assert.Equal(t, metalv1.DEVICESTATE_REINSTALLING, e.get(d.GetId()).GetState())

			e.clock.Advance(durationOf(tt.wantDuration - 1))
			assert.Equal(t, metalv1.DEVICESTATE_REINSTALLING, e.get(d.GetId()).GetState())
			e.clock.Advance(1)
			got := e.get(d.GetId())
			assert.Equal(t, metalv1.DEVICESTATE_ACTIVE, got.GetState())
			assert.Equal(t, tt.wantScriptURL, got.GetIpxeScriptUrl())

			boots := rec.of(DeviceBooted)
			require.Len(t, boots, 2)
			assert.Equal(t, BootReinstall, boots[1].Boot.Reason)
			assert.True(t, boots[1].Boot.PXE)
			assert.Equal(t, tt.wantScriptURL, boots[1].Boot.IPXEScriptURL)
			assert.Equal(t, tt.preserve, boots[1].Boot.PreserveData)
		})
	}
}

func TestPowerCycle(t *testing.T) {
	e := newEnv(t)
	tm := DefaultTimings()
	rec := record(e.sim)
	d := e.createActive("node-1", func(in *metalv1.DeviceCreateInMetroInput) { in.AlwaysPxe = ptr(true) })

	_, err := e.action(d.GetId(), metalv1.DeviceActionInput{Type: metalv1.DEVICEACTIONINPUTTYPE_POWER_OFF})
	require.NoError(t, err)
	assert.Equal(t, metalv1.DEVICESTATE_POWERING_OFF, e.get(d.GetId()).GetState())
	e.clock.Advance(tm.Power)
	assert.Equal(t, metalv1.DEVICESTATE_INACTIVE, e.get(d.GetId()).GetState())
	assert.Len(t, rec.of(DevicePoweredOff), 1)

	resp, err := e.action(d.GetId(), metalv1.DeviceActionInput{Type: metalv1.DEVICEACTIONINPUTTYPE_REBOOT})
	requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "Cannot reboot a device while it is inactive")

	_, err = e.action(d.GetId(), metalv1.DeviceActionInput{Type: metalv1.DEVICEACTIONINPUTTYPE_POWER_ON})
	require.NoError(t, err)
	assert.Equal(t, metalv1.DEVICESTATE_POWERING_ON, e.get(d.GetId()).GetState())
	e.clock.Advance(tm.Power)
	assert.Equal(t, metalv1.DEVICESTATE_ACTIVE, e.get(d.GetId()).GetState())

	boots := rec.of(DeviceBooted)
	require.Len(t, boots, 2)
	assert.Equal(t, BootPowerOn, boots[1].Boot.Reason)
	assert.True(t, boots[1].Boot.PXE, "always_pxe boots iPXE every time")
}

func TestRebootAndRescueKeepTheDeviceActive(t *testing.T) {
	e := newEnv(t)
	tm := DefaultTimings()
	rec := record(e.sim)
	d := e.createActive("node-1")

	for _, typ := range []metalv1.DeviceActionInputType{metalv1.DEVICEACTIONINPUTTYPE_REBOOT, metalv1.DEVICEACTIONINPUTTYPE_RESCUE} {
		_, err := e.action(d.GetId(), metalv1.DeviceActionInput{Type: typ})
		require.NoError(t, err)
		assert.Equal(t, metalv1.DEVICESTATE_ACTIVE, e.get(d.GetId()).GetState())
		e.clock.Advance(tm.Power)
		e.sim.Tick()
	}
	boots := rec.of(DeviceBooted)
	require.Len(t, boots, 3)
	assert.Equal(t, BootReboot, boots[1].Boot.Reason)
	assert.False(t, boots[1].Boot.PXE, "without always_pxe a reboot boots from disk")
	assert.Equal(t, BootRescue, boots[2].Boot.Reason)
}

func TestActionsRefusedInTransitionalStates(t *testing.T) {
	e := newEnv(t)
	d := e.create(ipxeInput("node-1"))
	resp, err := e.action(d.GetId(), metalv1.DeviceActionInput{Type: metalv1.DEVICEACTIONINPUTTYPE_POWER_OFF})
	requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "Cannot power off a device while it is queued")

	active := e.createActive("node-2")
	assert.Len(t, active.Actions, 4)
	resp, err = e.action(active.GetId(), metalv1.DeviceActionInput{
		Type: metalv1.DEVICEACTIONINPUTTYPE_REINSTALL, OperatingSystem: ptr("ubuntu_22_04"), IpxeScriptUrl: ptr(testIPXEURL),
	})
	requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "only valid with the custom_ipxe")
}
