package hardware

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
)

// eventsAPI is the outbox's apiserver: it counts each machine event's
// writes, and refuses the events in fail once each.
type eventsAPI struct {
	mu     sync.Mutex
	posted map[string]int
	fail   map[string]bool
	woken  map[string]int
}

func (p *eventsAPI) post(_ context.Context, ev *corev1.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	id := ev.Annotations[equinixv1.AnnotationMachineEventID]
	if p.fail[id] {
		delete(p.fail, id)
		return errors.New("apiserver unavailable")
	}
	p.posted[id]++
	return nil
}

func (p *eventsAPI) wake(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.woken[key]++
}

func (p *eventsAPI) count(m map[string]int, key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return m[key]
}

func pending(ids ...string) []pendingEvent {
	out := make([]pendingEvent, 0, len(ids))
	for _, id := range ids {
		out = append(out, pendingEvent{ev: machine.Event{ID: id, Cursor: "c-" + id}, involved: &involvedObject{owner: "a"}})
	}
	return out
}

func ids(es []pendingEvent) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.ev.ID)
	}
	return out
}

func startOutbox(t *testing.T, fail ...string) (*Outbox, *eventsAPI) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p := &eventsAPI{posted: map[string]int{}, fail: map[string]bool{}, woken: map[string]int{}}
	for _, f := range fail {
		p.fail[f] = true
	}
	o := newOutbox(ctx, p.post, p.wake)
	o.Start()
	return o, p
}

func TestOutboxWritesEachEventOnceAndWakesItsOwner(t *testing.T) {
	o, p := startOutbox(t)
	o.offer("a", pending("1", "2", "3"))
	require.Eventually(t, func() bool { return len(o.written("a")) == 3 }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return p.count(p.woken, "a") == 1 }, 10*time.Second, 10*time.Millisecond)

	// The owner stored the cursor of 1 and 2 and offers what follows,
	// with a new event: only that one is written.
	o.offer("a", pending("3", "4"))
	require.Eventually(t, func() bool { return len(o.written("a")) == 2 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{"3", "4"}, ids(o.written("a")))
	for _, id := range []string{"1", "2", "3", "4"} {
		assert.Equal(t, 1, p.count(p.posted, id), "event %s", id)
	}

	// Nothing left after the cursor: the backlog goes.
	o.offer("a", nil)
	assert.Empty(t, o.written("a"))
}

func TestOutboxDeliversOnlyAnUnbrokenRunAndRetries(t *testing.T) {
	o, p := startOutbox(t, "2")
	o.offer("a", pending("1", "2", "3"))
	// 2 is refused once: it is written again, and no event twice.
	require.Eventually(t, func() bool { return len(o.written("a")) == 3 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{"1", "2", "3"}, ids(o.written("a")))
	assert.Equal(t, "c-3", o.written("a")[2].ev.Cursor)
	for _, id := range []string{"1", "2", "3"} {
		assert.Equal(t, 1, p.count(p.posted, id), "event %s", id)
	}
}

func TestOutboxForgetsAGoneOwner(t *testing.T) {
	o, p := startOutbox(t, "1")
	o.offer("a", pending("1"))
	o.Drop("a")
	assert.Empty(t, o.written("a"))
	// The retry finds nothing to write, and wakes nobody.
	o.offer("b", pending("9"))
	require.Eventually(t, func() bool { return p.count(p.woken, "b") == 1 }, 10*time.Second, 10*time.Millisecond)
	assert.Zero(t, p.count(p.woken, "a"))
}

func TestOutboxWrittenPrefix(t *testing.T) {
	o := &Outbox{backlogs: map[string]*backlog{"a": {events: pending("1", "2", "3"), written: map[string]bool{"1": true, "3": true}}}}
	assert.Equal(t, []string{"1"}, ids(o.written("a")))
}
