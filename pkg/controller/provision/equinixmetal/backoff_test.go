package equinixmetal

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// fakeClock is the chains' clock in these tests.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func (w *createWorld) withClock() *fakeClock {
	c := &fakeClock{t: time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)}
	w.h.now = c.now
	w.h.settings.CreateBackoff = time.Minute
	return c
}

// passes runs n reconciles back to back, as status writes and related
// changes trigger them.
func (w *createWorld) passes(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		_, err := w.pass()
		require.NoError(t, err)
	}
}

// A create refused for lack of capacity is not sent again before its wait,
// however often the Instance runs, and the wait doubles and survives a
// restart. Before, each pass stored the create intent, which re-ran the
// Instance at once: 1,446 creates in 15 s for one Instance.
func TestRefusedCreatesArePaced(t *testing.T) {
	w := newCreateWorld(t)
	clock := w.withClock()
	w.sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultNoCapacity, Operations: []string{metalsim.OpCreateDevice}})

	w.passes(t, 50)
	assert.Equal(t, 1, w.creates(), "refused creates sent within the first wait")
	lists := len(w.sim.RequestsFor(metalsim.OpFindProjectDevices))
	assert.Equal(t, 1, lists, "the adoption list waits with the create")
	st := w.store.stored.Status
	require.NotNil(t, st.CreateRetry)
	assert.EqualValues(t, 1, st.CreateRetry.Failures)
	assert.Equal(t, clock.t.Add(time.Minute), st.CreateRetry.NotBefore.Time)
	c := conditions.Get(st.Conditions, equinixv1.InstanceDeviceCreated)
	require.NotNil(t, c)
	assert.Equal(t, equinixv1.ReasonNoCapacity, c.Reason)
	assert.Contains(t, c.Message, "the next create is sent at 2026-11-25T09:01:00Z")

	clock.advance(59 * time.Second)
	w.passes(t, 10)
	assert.Equal(t, 1, w.creates(), "sent before its wait was over")
	clock.advance(time.Second)
	w.passes(t, 10)
	assert.Equal(t, 2, w.creates(), "the second create after one wait")
	assert.EqualValues(t, 2, w.store.stored.Status.CreateRetry.Failures)
	assert.Equal(t, clock.t.Add(2*time.Minute), w.store.stored.Status.CreateRetry.NotBefore.Time, "the wait doubles")

	// A restarted controller reads the wait from the status.
	restarted := *w.h
	restarted.devices, restarted.vlanIDs = nil, nil
	w.h = &restarted
	clock.advance(119 * time.Second)
	w.passes(t, 10)
	assert.Equal(t, 2, w.creates(), "a restart brought the create forward")

	w.sim.ClearFaults()
	clock.advance(time.Second)
	done, err := w.pass()
	require.NoError(t, err)
	require.True(t, done)
	assert.Equal(t, 3, w.creates())
	assert.Nil(t, w.store.stored.Status.CreateRetry, "a created device ends the pacing")
	assert.Len(t, w.sim.Devices(testProject), 1)
}

// A throttled create waits what the API asked and does not lengthen the
// doubling of real refusals.
func TestThrottledCreateWaitsRetryAfter(t *testing.T) {
	w := newCreateWorld(t)
	clock := w.withClock()
	w.sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultRateLimit, RetryAfter: 5 * time.Second, Count: 1, Operations: []string{metalsim.OpCreateDevice}})
	w.passes(t, 20)
	assert.Equal(t, 1, w.creates())
	retry := w.store.stored.Status.CreateRetry
	require.NotNil(t, retry)
	assert.Zero(t, retry.Failures, "throttling says nothing about the request")
	assert.Equal(t, equinixv1.ReasonThrottled, retry.Reason)
	assert.Equal(t, clock.t.Add(5*time.Second), retry.NotBefore.Time)
	assert.Nil(t, conditions.Get(w.store.stored.Status.Conditions, equinixv1.InstanceDeviceCreated), "throttling is not a problem of this server")
}

// The project is recorded, and stored, before the create is sent.
func TestProjectRecordedBeforeTheCreate(t *testing.T) {
	w := newCreateWorld(t)
	var atCreate equinixv1.InstanceStatus
	t.Cleanup(w.sim.Subscribe(func(n metalsim.Notification) {
		if n.Type == metalsim.DeviceCreated {
			atCreate = *w.store.stored.Status.DeepCopy()
		}
	}))
	done, err := w.pass()
	require.NoError(t, err)
	require.True(t, done)
	assert.Equal(t, testProject, atCreate.ProjectID, "stored when the create reached the API")
	assert.Equal(t, "sg", atCreate.Metro)
	entries, err := w.h.ledger.Entries()
	require.NoError(t, err)
	assert.Equal(t, []string{"sg"}, entries[testProject], "the ledger remembers the project for the sweep")
}
