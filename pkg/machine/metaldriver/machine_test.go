package metaldriver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// The facts are the plan's, from one plans call for any number of
// machines; the API names no manufacturer or serial number, so none is
// made up.
func TestFactsComeFromThePlanCatalog(t *testing.T) {
	w := newWorld(t)
	a, b := w.device("node-a"), w.device("node-b")
	d := w.driver()
	w.sim.ResetRequests()
	fa, err := d.Machine(w.creds, Device{ID: a.ID, Plan: "c3.small.x86"}).Facts(w.ctx)
	require.NoError(t, err)
	_, err = d.Machine(w.creds, Device{ID: b.ID, Plan: "c3.small.x86"}).Facts(w.ctx)
	require.NoError(t, err)
	assert.Len(t, w.sim.RequestsFor(metalsim.OpFindPlans), 1)
	assert.Len(t, w.sim.Requests(), 1, "facts read no device")

	plans, err := w.client.ListPlans(w.ctx)
	require.NoError(t, err)
	var want metal.Plan
	for _, p := range plans {
		if p.Slug == "c3.small.x86" {
			want = p
		}
	}
	require.NotEmpty(t, want.CPUs)
	assert.Equal(t, "c3.small.x86", fa.Model)
	assert.Empty(t, fa.Manufacturer)
	assert.Empty(t, fa.SerialNumber)
	assert.Equal(t, want.Memory, fa.Memory)
	assert.Equal(t, want.CPUs[0].Type, fa.CPUs[0].Type)
	assert.Equal(t, len(want.Drives), len(fa.Drives))
	assert.True(t, fa.TerminationTime.IsZero())

	// An unknown plan has no specs, and no error.
	fu, err := d.Machine(w.creds, Device{ID: a.ID, Plan: "x9.unknown"}).Facts(w.ctx)
	require.NoError(t, err)
	assert.Equal(t, "x9.unknown", fu.Model)
	assert.Empty(t, fu.CPUs)
}

// A project with spot servers is asked for its devices with a termination
// time, one filtered list per interval; the machine's facts carry the time
// and its owner is woken.
func TestTerminationTimesOfWatchedProjects(t *testing.T) {
	w := newWorld(t)
	a, b := w.device("node-a"), w.device("node-b")
	d := w.driver()
	at := w.clock.Now().Add(2 * time.Minute).UTC().Truncate(time.Second)
	require.NoError(t, w.sim.SetTerminationTime(b.ID, at))
	w.sim.ResetRequests()
	d.pass(w.ctx, []Project{{Credentials: w.creds, WatchTerminations: true}})
	assert.Len(t, w.sim.RequestsFor(metalsim.OpFindProjectDevices), 1)
	assert.Positive(t, w.notified[b.ID])
	fb, err := d.Machine(w.creds, Device{ID: b.ID}).Facts(w.ctx)
	require.NoError(t, err)
	assert.True(t, at.Equal(fb.TerminationTime), "%s", fb.TerminationTime)
	fa, err := d.Machine(w.creds, Device{ID: a.ID}).Facts(w.ctx)
	require.NoError(t, err)
	assert.True(t, fa.TerminationTime.IsZero())

	// Not due again before the interval; an unwatched project is not asked
	// unless a termination notice shows in its log.
	d.pass(w.ctx, []Project{{Credentials: w.creds, WatchTerminations: true}})
	assert.Len(t, w.sim.RequestsFor(metalsim.OpFindProjectDevices), 1)
	unwatched := []Project{{Credentials: w.creds}}
	d2 := w.driver()
	d2.pass(w.ctx, unwatched)
	d2.pass(w.ctx, unwatched)
	assert.Len(t, w.sim.RequestsFor(metalsim.OpFindProjectDevices), 2, "b's notice in the log asked for one list")
	w.clock.Advance(DefaultEventsInterval)
	d2.pass(w.ctx, unwatched)
	d2.pass(w.ctx, unwatched)
	assert.Len(t, w.sim.RequestsFor(metalsim.OpFindProjectDevices), 2, "no notice, no list")
	at = w.clock.Now().Add(time.Hour).UTC().Truncate(time.Second)
	require.NoError(t, w.sim.SetTerminationTime(a.ID, at))
	w.clock.Advance(DefaultEventsInterval)
	d2.pass(w.ctx, unwatched)
	d2.pass(w.ctx, unwatched)
	assert.Len(t, w.sim.RequestsFor(metalsim.OpFindProjectDevices), 3, "a's notice asked for one list")
	fa, err = d2.Machine(w.creds, Device{ID: a.ID}).Facts(w.ctx)
	require.NoError(t, err)
	assert.True(t, at.Equal(fa.TerminationTime), "%s; %v", fa.TerminationTime, w.sim.RequestsFor(metalsim.OpFindProjectDevices))
}

// Power actions are one device action each; the machine's power follows
// the device's state; the errors say whether the action may have landed.
func TestPowerActionsAndTheirErrors(t *testing.T) {
	w := newWorld(t)
	a := w.device("node-a")
	m := w.driver().Machine(w.creds, Device{ID: a.ID})
	st, err := m.PowerState(w.ctx)
	require.NoError(t, err)
	assert.Equal(t, machine.PowerOn, st)

	w.sim.ResetRequests()
	require.NoError(t, m.Power(w.ctx, machine.ActionOff))
	assert.Len(t, w.sim.RequestsFor(metalsim.OpPerformAction), 1)
	st, err = m.PowerState(w.ctx)
	require.NoError(t, err)
	assert.Contains(t, []machine.PowerState{machine.PowerPoweringOff, machine.PowerOff}, st)

	// Switching on what is already off-bound waits for the state to settle.
	err = m.Power(w.ctx, machine.ActionReboot)
	assert.Contains(t, []failure.Class{failure.Busy, failure.Refused}, failure.ClassOf(err), "%v", err)
	assert.False(t, machine.MaybeApplied(err))

	w.sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultRateLimit, Operations: []string{metalsim.OpPerformAction}, Count: 1, RetryAfter: time.Second})
	err = m.Power(w.ctx, machine.ActionOn)
	assert.Equal(t, failure.Throttled, failure.ClassOf(err), "%v", err)
	assert.False(t, machine.MaybeApplied(err))
	assert.Positive(t, failure.RetryAfter(err))
	w.clock.Advance(2 * time.Second)

	w.sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultServerError, Status: 500, Operations: []string{metalsim.OpPerformAction}, Count: 1, AfterStore: true})
	err = m.Power(context.Background(), machine.ActionOn)
	assert.Equal(t, failure.Transient, failure.ClassOf(err), "%v", err)
	assert.True(t, machine.MaybeApplied(err), "a 5xx may have been carried out")

	gone := w.driver().Machine(w.creds, Device{ID: "00000000-0000-0000-0000-000000000000"})
	_, err = gone.PowerState(w.ctx)
	assert.Equal(t, failure.NotFound, failure.ClassOf(err), "%v", err)
}

// Run polls each project at its interval and forgets those no longer
// listed.
func TestRunPollsTheListedProjects(t *testing.T) {
	w := newWorld(t)
	w.device("node-a")
	d := w.driver()
	w.sim.ResetRequests()
	wait := d.pass(w.ctx, []Project{{Credentials: w.creds}})
	assert.Len(t, w.sim.RequestsFor(metalsim.OpFindProjectEvents), 1)
	assert.Equal(t, rescan, wait)
	w.clock.Advance(DefaultEventsInterval - time.Second)
	assert.Equal(t, time.Second, d.pass(w.ctx, []Project{{Credentials: w.creds}}))
	assert.Len(t, w.sim.RequestsFor(metalsim.OpFindProjectEvents), 1)
	w.clock.Advance(time.Second)
	d.pass(w.ctx, []Project{{Credentials: w.creds}})
	assert.Len(t, w.sim.RequestsFor(metalsim.OpFindProjectEvents), 2)
	d.pass(w.ctx, nil)
	assert.Nil(t, d.known(project))

	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan struct{})
	go func() { d.Run(ctx, func() []Project { return []Project{{Credentials: w.creds}} }); close(done) }()
	require.Eventually(t, func() bool { return len(w.sim.RequestsFor(metalsim.OpFindProjectEvents)) == 3 }, 5*time.Second, 10*time.Millisecond)
	cancel()
	<-done
}
