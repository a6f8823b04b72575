package metalsim

import (
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (e *env) events(id string) []string {
	e.t.Helper()
	events, err := e.sim.DeviceEvents(id)
	require.NoError(e.t, err)
	return eventTypes(events)
}

func TestPowerActionsAreRecorded(t *testing.T) {
	e := newEnv(t)
	tm := DefaultTimings()
	rec := record(e.sim)
	d := e.createActive("node-1")
	act := func(typ metalv1.DeviceActionInputType) {
		resp, err := e.action(d.GetId(), metalv1.DeviceActionInput{Type: typ})
		require.NoError(t, err)
		assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	}

	act(metalv1.DEVICEACTIONINPUTTYPE_POWER_OFF)
	e.clock.Advance(tm.Power)
	assert.Equal(t, []string{EventPoweredOff, EventPowerOff}, e.events(d.GetId())[:2])
	act(metalv1.DEVICEACTIONINPUTTYPE_POWER_ON)
	e.clock.Advance(tm.Power)
	assert.Equal(t, []string{EventDHCP, EventPoweredOn, EventPowerOn}, e.events(d.GetId())[:3])

	act(metalv1.DEVICEACTIONINPUTTYPE_REBOOT)
	e.sim.Tick()
	down := rec.of(DeviceRebooting)
	require.Len(t, down, 1, "the host goes down at once")
	assert.Equal(t, BootReboot, down[0].Boot.Reason)
	assert.Equal(t, metalv1.DEVICESTATE_ACTIVE, down[0].State)
	assert.Len(t, rec.of(DeviceBooted), 2, "and is back only after the reboot")
	e.clock.Advance(tm.Power)
	e.sim.Tick()
	boots := rec.of(DeviceBooted)
	require.Len(t, boots, 3)
	assert.Equal(t, BootReboot, boots[2].Boot.Reason)
	assert.Equal(t, []string{EventDHCP, EventReboot}, e.events(d.GetId())[:2])
}

// Faults can be narrowed to one action type, like any operation.
func TestFaultsOnActions(t *testing.T) {
	e := newEnv(t)
	tm := DefaultTimings()
	d := e.createActive("node-1")
	id := d.GetId()
	powerOff := metalv1.DeviceActionInput{Type: metalv1.DEVICEACTIONINPUTTYPE_POWER_OFF}

	t.Run("429 on power_off only", func(t *testing.T) {
		f := e.sim.InjectFault(Fault{Kind: FaultRateLimit, Operations: []string{OpPerformAction}, Actions: []string{"power_off"}, Count: 1})
		resp, err := e.action(id, metalv1.DeviceActionInput{Type: metalv1.DEVICEACTIONINPUTTYPE_REBOOT})
		require.NoError(t, err, "a reboot is not hit")
		assert.Equal(t, http.StatusAccepted, resp.StatusCode)
		resp, err = e.action(id, powerOff)
		requireAPIError(t, resp, err, http.StatusTooManyRequests, "")
		assert.Equal(t, 1, e.sim.FaultFired(f))
		assert.Equal(t, metalv1.DEVICESTATE_ACTIVE, e.get(id).GetState(), "a refused power off changes nothing")
	})

	t.Run("500 after the power off was applied", func(t *testing.T) {
		e.clock.Advance(tm.Power)
		e.sim.InjectFault(Fault{Kind: FaultServerError, Actions: []string{"power_off"}, AfterStore: true, Count: 1})
		resp, err := e.action(id, powerOff)
		requireAPIError(t, resp, err, http.StatusInternalServerError, "")
		assert.Equal(t, metalv1.DEVICESTATE_POWERING_OFF, e.get(id).GetState())
		e.clock.Advance(tm.Power)
	})

	t.Run("dropped connection after the power on was applied", func(t *testing.T) {
		e.sim.InjectFault(Fault{Kind: FaultDropConnection, Actions: []string{"power_on"}, AfterStore: true, Count: 1})
		_, err := e.action(id, metalv1.DeviceActionInput{Type: metalv1.DEVICEACTIONINPUTTYPE_POWER_ON})
		var urlErr *url.Error
		require.True(t, errors.As(err, &urlErr), "want a transport error, got %v", err)
		assert.Equal(t, metalv1.DEVICESTATE_POWERING_ON, e.get(id).GetState())
		e.clock.Advance(tm.Power)
	})

	t.Run("latency on reboot", func(t *testing.T) {
		f := e.sim.InjectFault(Fault{Kind: FaultLatency, Actions: []string{"reboot"}, Latency: time.Millisecond, Count: 1})
		_, err := e.action(id, metalv1.DeviceActionInput{Type: metalv1.DEVICEACTIONINPUTTYPE_REBOOT})
		require.NoError(t, err)
		assert.Equal(t, 1, e.sim.FaultFired(f))
	})
}

func TestMaintenanceEvent(t *testing.T) {
	e := newEnv(t)
	d := e.createActive("node-1")
	start := testStart.Add(48 * time.Hour)
	require.NoError(t, e.sim.AddMaintenanceEvent(d.GetId(), start, "switch firmware upgrade"))
	events, err := e.sim.DeviceEvents(d.GetId())
	require.NoError(t, err)
	assert.Equal(t, EventMaintenance, events[0].GetType())
	assert.Equal(t, "scheduled", events[0].GetState())
	assert.Equal(t, "Maintenance of node-1 is scheduled for 2026-03-03T12:00:00Z: switch firmware upgrade", events[0].GetInterpolated())
	assert.ErrorIs(t, e.sim.AddMaintenanceEvent("no-such-device", start, ""), ErrNotFound)
}
