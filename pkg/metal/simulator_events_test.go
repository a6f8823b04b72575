package metal_test

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// eventLog makes two active devices and n more events on the first, a
// second apart, and returns the devices and the times of those events.
func eventLog(t *testing.T, e *simEnv, n int) (a, b *metal.Device, times []time.Time) {
	t.Helper()
	a = e.activeDevice(t, "node-a")
	b = e.activeDevice(t, "node-b")
	for i := range n {
		e.clock.Advance(time.Second)
		times = append(times, e.clock.Now())
		require.NoError(t, e.sim.AddDeviceEvent(a.ID, "test.step", fmt.Sprintf("{{ device }} step %d", i)))
	}
	return a, b, times
}

func pagesRead(t *testing.T, e *simEnv) []string {
	t.Helper()
	var pages []string
	for _, r := range e.sim.RequestsFor(metalsim.OpFindProjectEvents) {
		q, err := url.ParseQuery(r.Query)
		require.NoError(t, err)
		assert.Equal(t, "100", q.Get("per_page"))
		pages = append(pages, q.Get("page"))
	}
	return pages
}

func TestSimListProjectEvents(t *testing.T) {
	e := newSimEnv(t, metalsim.Timings{})
	a, b, times := eventLog(t, e, 230)

	t.Run("the whole log, every page, newest first", func(t *testing.T) {
		e.sim.ResetRequests()
		all, err := e.client.ListProjectEvents(e.ctx, metal.ListEventsOptions{})
		require.NoError(t, err)
		assert.Equal(t, []string{"1", "2", "3"}, pagesRead(t, e))
		require.Greater(t, len(all), 230)
		assert.Equal(t, "node-a step 229", all[0].Interpolated)
		byDevice := map[string]int{}
		for i, ev := range all {
			byDevice[ev.DeviceID]++
			if i > 0 {
				assert.False(t, ev.CreatedAt.After(all[i-1].CreatedAt))
			}
		}
		assert.Len(t, byDevice, 2)
		assert.Greater(t, byDevice[b.ID], 0)
		assert.Equal(t, len(all)-byDevice[b.ID], byDevice[a.ID])
		assert.Equal(t, metalsim.EventCreated, all[len(all)-1].Type)
	})

	t.Run("a recent Since stops at the first page", func(t *testing.T) {
		e.sim.ResetRequests()
		got, err := e.client.ListProjectEvents(e.ctx, metal.ListEventsOptions{Since: times[200]})
		require.NoError(t, err)
		assert.Equal(t, []string{"1"}, pagesRead(t, e))
		require.Len(t, got, 30)
		assert.Equal(t, "node-a step 200", got[29].Interpolated)
		for _, ev := range got {
			assert.Equal(t, a.ID, ev.DeviceID)
			assert.False(t, ev.CreatedAt.Before(times[200]))
		}
	})

	t.Run("an older Since reads only as far as it needs", func(t *testing.T) {
		e.sim.ResetRequests()
		got, err := e.client.ListProjectEvents(e.ctx, metal.ListEventsOptions{Since: times[50]})
		require.NoError(t, err)
		assert.Equal(t, []string{"1", "2"}, pagesRead(t, e))
		assert.Len(t, got, 180)
	})

	t.Run("nothing new", func(t *testing.T) {
		got, err := e.client.ListProjectEvents(e.ctx, metal.ListEventsOptions{Since: e.clock.Now().Add(time.Second)})
		require.NoError(t, err)
		assert.Empty(t, got)
	})
}

func TestSimListProjectEventsErrors(t *testing.T) {
	e := newSimEnv(t, metalsim.Timings{}, func(o *metal.Options) { o.MaxLimiterWait = time.Second })
	e.activeDevice(t, "node-a")

	t.Run("403 is Forbidden", func(t *testing.T) {
		e.sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultForbidden, Operations: []string{metalsim.OpFindProjectEvents}, Count: 1})
		_, err := e.client.ListProjectEvents(e.ctx, metal.ListEventsOptions{})
		assert.Equal(t, failure.Forbidden, failure.ClassOf(err), "%v", err)
	})

	t.Run("404 names a wrong project: a credentials problem", func(t *testing.T) {
		p, err := metal.NewProvider(metal.Options{BaseURL: e.url})
		require.NoError(t, err)
		c, err := p.Client(metal.Credentials{Token: simToken, ProjectID: "00000000-0000-4000-8000-000000000001"})
		require.NoError(t, err)
		_, err = c.ListProjectEvents(e.ctx, metal.ListEventsOptions{})
		assert.Equal(t, failure.Unauthorized, failure.ClassOf(err), "%v", err)
	})

	t.Run("429 is Throttled with the API's Retry-After", func(t *testing.T) {
		e.sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultRateLimit, Operations: []string{metalsim.OpFindProjectEvents}, Count: 1, RetryAfter: 5 * time.Second})
		_, err := e.client.ListProjectEvents(e.ctx, metal.ListEventsOptions{})
		assert.True(t, metal.IsThrottled(err), "%v", err)
		assert.Equal(t, 5*time.Second, failure.RetryAfter(err))
		e.clock.Advance(5 * time.Second)
		got, err := e.client.ListProjectEvents(e.ctx, metal.ListEventsOptions{})
		require.NoError(t, err)
		assert.NotEmpty(t, got)
	})
}
