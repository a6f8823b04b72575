package metaldriver

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// Every event of a device is forwarded exactly once, across polls that
// read overlapping pages and across a restart of the driver, and each poll
// is one project list, whatever the number of devices.
func TestEventsOncePerDeviceAcrossPollsAndRestarts(t *testing.T) {
	w := newWorld(t)
	a, b := w.device("node-a"), w.device("node-b")
	d := w.driver()
	ma := d.Machine(w.creds, Device{ID: a.ID, Plan: a.Plan})
	mb := d.Machine(w.creds, Device{ID: b.ID, Plan: b.Plan})
	seen := map[string]int{}
	cursors := map[string]string{}
	take := func(m machine.Machine, key string) {
		evs, c := w.deliver(m, cursors[key])
		cursors[key] = c
		for _, e := range evs {
			seen[e.ID]++
		}
	}

	w.sim.ResetRequests()
	w.pollEvents(d)
	assert.Len(t, w.sim.RequestsFor(metalsim.OpFindProjectEvents), 1, "one project list, not one per device")
	assert.Equal(t, 1, w.notified[a.ID])
	take(ma, "a")
	take(mb, "b")
	first := len(seen)
	require.Positive(t, first, "the devices' creation and provisioning events")

	for i := range 5 {
		w.clock.Advance(5 * time.Second)
		require.NoError(t, w.sim.AddDeviceEvent(a.ID, "test.step", fmt.Sprintf("{{ device }} step %d", i)))
		w.pollEvents(d)
		take(ma, "a")
		take(mb, "b")
	}
	assert.Len(t, seen, first+5)

	// A restart: a new driver reads on from the stored log position, and the
	// cursors the owners kept filter what it lists again.
	w.clock.Advance(10 * time.Second)
	require.NoError(t, w.sim.AddDeviceEvent(b.ID, "test.after", "{{ device }} after the restart"))
	d2 := w.driver()
	ma, mb = d2.Machine(w.creds, Device{ID: a.ID}), d2.Machine(w.creds, Device{ID: b.ID})
	w.pollEvents(d2)
	take(ma, "a")
	take(mb, "b")
	assert.Len(t, seen, first+6)
	for id, n := range seen {
		assert.Equal(t, 1, n, "event %s forwarded %d times", id, n)
	}
}

// The log position moves to the oldest event not yet forwarded, and a restart
// reads the log from there: with everything forwarded, only the newest
// page.
func TestLogPositionWaitsForTheOwnersAndBoundsTheRestartRead(t *testing.T) {
	w := newWorld(t)
	a := w.device("node-a")
	d := w.driver()
	m := d.Machine(w.creds, Device{ID: a.ID})
	w.pollEvents(d)
	_, cursor := w.deliver(m, "")
	for i := range 250 {
		w.clock.Advance(time.Second)
		require.NoError(t, w.sim.AddDeviceEvent(a.ID, "test.burst", fmt.Sprintf("burst %d", i)))
	}
	w.clock.Advance(time.Minute)
	w.pollEvents(d)
	held := w.store.at[project]
	evs, _ := w.deliver(m, cursor)
	require.Len(t, evs, 250)
	assert.False(t, held.After(evs[0].Time), "the log position waited for the owner: %s > %s", held, evs[0].Time)

	// Forwarding them (passing the last cursor) lets the log position move.
	_, cursor = w.deliver(m, evs[len(evs)-1].Cursor)
	w.clock.Advance(time.Minute)
	w.pollEvents(d)
	assert.False(t, w.store.at[project].Before(evs[len(evs)-1].Time), "the log position moved past the events forwarded")

	w.clock.Advance(2 * time.Minute)
	w.sim.ResetRequests()
	d2 := w.driver()
	w.pollEvents(d2)
	assert.Len(t, w.sim.RequestsFor(metalsim.OpFindProjectEvents), 1, "a restart reads from the log position, not the whole log")
	got, _ := w.deliver(d2.Machine(w.creds, Device{ID: a.ID}), cursor)
	assert.Empty(t, got)
}

// Once the log was read, an idle poll reads one page, however many events
// came in a burst before: what was there to list was listed.
func TestIdlePollsReadOnePage(t *testing.T) {
	w := newWorld(t)
	a := w.device("node-a")
	for i := range 250 {
		require.NoError(t, w.sim.AddDeviceEvent(a.ID, "test.burst", fmt.Sprintf("burst %d", i)))
	}
	d := w.driver()
	m := d.Machine(w.creds, Device{ID: a.ID})
	w.pollEvents(d)
	evs, _ := w.deliver(m, "")
	require.Greater(t, len(evs), 250)
	_, _ = w.deliver(m, evs[len(evs)-1].Cursor)
	// The next poll reads again what the API may have listed late since
	// the burst's read; then every poll is one page.
	w.clock.Advance(DefaultEventsInterval)
	w.pollEvents(d)
	for range 3 {
		w.clock.Advance(DefaultEventsInterval)
		w.sim.ResetRequests()
		w.pollEvents(d)
		assert.Len(t, w.sim.RequestsFor(metalsim.OpFindProjectEvents), 1)
	}
}

// Events of devices nobody asks about (another tool's servers) are dropped
// after a while and do not hold the log position for ever.
func TestForeignDevicesDoNotHoldTheLogPosition(t *testing.T) {
	w := newWorld(t)
	foreign := w.device("foreign")
	d := w.driver()
	w.pollEvents(d)
	first := w.store.at[project]
	w.clock.Advance(d.holdFor() + time.Minute)
	require.NoError(t, w.sim.AddDeviceEvent(foreign.ID, "test.late", "late"))
	w.pollEvents(d)
	assert.True(t, w.store.at[project].After(first))
	ps := d.project(project)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	assert.Len(t, ps.devices[foreign.ID].entries, 1, "only the recent event is kept")
}

func TestCursorCoversLateListedEvents(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := func(id string, s int) machine.Event {
		return machine.Event{ID: id, Time: t0.Add(time.Duration(s) * time.Second)}
	}
	c := cursor{}.advance(ev("a", 10)).advance(ev("b", 20))
	back := parseCursor(c.String())
	assert.True(t, back.covers(ev("a", 10)))
	assert.True(t, back.covers(ev("b", 20)))
	assert.False(t, back.covers(ev("late", 15)), "an event listed late within the skew is still news")
	assert.True(t, back.covers(ev("old", -100)), "beyond the skew everything is forwarded")
	assert.False(t, back.covers(ev("next", 21)))
	far := back.advance(ev("c", 200))
	assert.Equal(t, []string{"c"}, far.ids, "IDs older than the window go")
	assert.Equal(t, cursor{}, parseCursor("garbage"))
	assert.Equal(t, "", cursor{}.String())
}
