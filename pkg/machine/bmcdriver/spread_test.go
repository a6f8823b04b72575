package bmcdriver

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
)

func TestSlotAfter(t *testing.T) {
	interval := 15 * time.Minute
	p := phase("0f6c2b1e-uid", interval)
	assert.Equal(t, p, phase("0f6c2b1e-uid", interval), "a key keeps its phase")
	assert.True(t, p >= 0 && p < interval)
	t0 := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	slot := slotAfter(t0, interval, p)
	assert.False(t, slot.Before(t0))
	assert.Less(t, slot.Sub(t0), interval)
	assert.Equal(t, time.Duration(0), time.Duration(slot.UnixNano()-int64(p))%interval, "a slot is the phase plus whole intervals")
	assert.Equal(t, slot, slotAfter(slot, interval, p), "a time on a slot is that slot")
	assert.Equal(t, slot.Add(interval), slotAfter(slot.Add(time.Nanosecond), interval, p))
}

// A thousand Inventories seen at once (a controller that started) are all
// polled at once the first time; from then on their polls spread over the
// interval instead of coming back in that burst at every interval, and
// each keeps one interval between its polls.
func TestSpreadPolls(t *testing.T) {
	const n = 1000
	interval := 15 * time.Minute
	d := New(Options{})
	t0 := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	perSecond := map[int64]int{}
	busiest := 0
	for i := range n {
		o := MachineOptions{Owner: fmt.Sprintf("node-%04d", i), Key: fmt.Sprintf("uid-%04d", i), Interval: interval, Spread: true,
			Now: func() time.Time { return t0 }}
		ep := bmc.Endpoint{Protocol: bmc.ProtocolRedfish, Host: "127.0.0.1", Port: 443}
		due, _ := d.Machine(ep, o).due()
		require.True(t, due, "the first poll is at once")

		o.LastPolled = t0
		due, left := d.Machine(ep, o).due()
		require.False(t, due)
		require.GreaterOrEqual(t, left, interval/2)
		require.Less(t, left, interval+interval/2)
		next := t0.Add(left)
		sec := next.Unix()
		perSecond[sec]++
		busiest = max(busiest, perSecond[sec])

		// From the slot on, one interval between polls.
		o.LastPolled, o.Now = next.Add(300*time.Millisecond), func() time.Time { return next.Add(300 * time.Millisecond) }
		_, again := d.Machine(ep, o).due()
		assert.Equal(t, interval-300*time.Millisecond, again)
	}
	// Evenly, a second holds 1.1 polls; a random phase puts a few more
	// into some seconds, never a burst.
	assert.LessOrEqual(t, busiest, 6, "the busiest second holds %d of %d polls", busiest, n)
}
