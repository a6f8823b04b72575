package metalsim

import (
	"net/http"
	"testing"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func spotInput(hostname string) metalv1.DeviceCreateInMetroInput {
	in := ipxeInput(hostname)
	in.SpotInstance = ptr(true)
	in.SpotPriceMax = ptr(float32(5))
	return in
}

// A spot device set to terminate in 3 s is gone soon after, not active
// 20 s later.
func TestTerminationTimeIsActedOn(t *testing.T) {
	e := newEnv(t)
	tm := DefaultTimings()
	rec := record(e.sim)
	d := e.createActive("spot-1", func(in *metalv1.DeviceCreateInMetroInput) {
		*in = spotInput("spot-1")
		in.TerminationTime = ptr(testStart.Add(tm.Queue + tm.IPXEBoot + 3*time.Second))
	})
	assert.Equal(t, testStart.Add(tm.Queue+tm.IPXEBoot+3*time.Second), d.GetTerminationTime())
	assert.Contains(t, e.events(d.GetId()), EventTerminationNotice, "the notice is recorded when the time is set")

	e.clock.Advance(3 * time.Second)
	got := e.get(d.GetId())
	assert.Equal(t, metalv1.DEVICESTATE_DEPROVISIONING, got.GetState())
	assert.Equal(t, []string{EventDeprovisioning, EventReclaimed}, e.events(d.GetId())[:2])
	e.sim.Tick()
	down := rec.of(DeviceStateChanged)
	assert.True(t, down[len(down)-1].Reclaimed)

	e.clock.Advance(tm.Deprovision)
	_, resp, err := e.client.DevicesApi.FindDeviceById(e.ctx, d.GetId()).Execute()
	requireAPIError(t, resp, err, http.StatusNotFound, "")
	gone := rec.of(DeviceDeleted)
	require.Len(t, gone, 1)
	assert.True(t, gone[0].Reclaimed)
	assert.False(t, gone[0].OutOfBand)
}

func TestTerminationTimeMustBeInTheFuture(t *testing.T) {
	e := newEnv(t)
	in := spotInput("spot-1")
	in.TerminationTime = ptr(testStart.Add(-time.Minute))
	_, resp, err := e.client.DevicesApi.CreateDevice(e.ctx, testProject).
		CreateDeviceRequest(metalv1.CreateDeviceRequest{DeviceCreateInMetroInput: &in}).Execute()
	requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "Termination time must be in the future")
}

func TestSetTerminationTime(t *testing.T) {
	e := newEnv(t)
	d := e.createActive("node-1")
	id := d.GetId()

	first := e.clock.Now().Add(time.Minute)
	require.NoError(t, e.sim.SetTerminationTime(id, first))
	assert.Equal(t, first, e.get(id).GetTerminationTime())
	later := e.clock.Now().Add(time.Hour)
	require.NoError(t, e.sim.SetTerminationTime(id, later))
	e.clock.Advance(2 * time.Minute)
	assert.Equal(t, metalv1.DEVICESTATE_ACTIVE, e.get(id).GetState(), "the earlier time was replaced")

	require.NoError(t, e.sim.SetTerminationTime(id, time.Time{}))
	assert.False(t, e.get(id).HasTerminationTime())
	e.clock.Advance(2 * time.Hour)
	assert.Equal(t, metalv1.DEVICESTATE_ACTIVE, e.get(id).GetState(), "a cleared time reclaims nothing")

	require.NoError(t, e.sim.SetTerminationTime(id, e.clock.Now()))
	dev, ok := e.sim.Device(id)
	require.True(t, ok)
	assert.Equal(t, metalv1.DEVICESTATE_DEPROVISIONING, dev.GetState(), "a time that has come reclaims at once")
	assert.ErrorIs(t, e.sim.SetTerminationTime("no-such-device", later), ErrNotFound)
}

func TestFaultSpotReclaim(t *testing.T) {
	e := newEnv(t)
	tm := DefaultTimings()
	f := e.sim.InjectFault(Fault{Kind: FaultSpotReclaim, LeadTime: 2 * time.Minute, Metro: "da", Count: 1})

	onDemand := e.createActive("node-1")
	assert.False(t, onDemand.HasTerminationTime())
	assert.Equal(t, 0, e.sim.FaultFired(f), "only spot devices are reclaimed")

	spot := e.createActive("spot-1", func(in *metalv1.DeviceCreateInMetroInput) { *in = spotInput("spot-1") })
	activeAt := e.clock.Now()
	assert.Equal(t, 1, e.sim.FaultFired(f))
	assert.Equal(t, activeAt.Add(2*time.Minute), spot.GetTerminationTime())
	e.clock.Advance(2 * time.Minute)
	assert.Equal(t, metalv1.DEVICESTATE_DEPROVISIONING, e.get(spot.GetId()).GetState())
	e.clock.Advance(tm.Deprovision)
	_, ok := e.sim.Device(spot.GetId())
	assert.False(t, ok)

	other := e.createActive("spot-2", func(in *metalv1.DeviceCreateInMetroInput) { *in = spotInput("spot-2") })
	assert.False(t, other.HasTerminationTime(), "the fault fired its count")
}
