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

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
)

// postbox is the outbox's apiserver: it counts each machine event's
// writes, and refuses the events in fail once each.
type postbox struct {
	mu     sync.Mutex
	posted map[string]int
	fail   map[string]bool
	woken  map[string]int
}

func (p *postbox) post(_ context.Context, ev *corev1.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	id := ev.Annotations[v1.AnnotationMachineEventID]
	if p.fail[id] {
		delete(p.fail, id)
		return errors.New("apiserver unavailable")
	}
	p.posted[id]++
	return nil
}

func (p *postbox) wake(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.woken[key]++
}

func (p *postbox) count(m map[string]int, key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return m[key]
}

func letters(ids ...string) []letter {
	out := make([]letter, 0, len(ids))
	for _, id := range ids {
		out = append(out, letter{ev: machine.Event{ID: id, Cursor: "c-" + id}, about: &subject{owner: "a"}})
	}
	return out
}

func ids(ls []letter) []string {
	out := []string{}
	for _, l := range ls {
		out = append(out, l.ev.ID)
	}
	return out
}

func startOutbox(t *testing.T, fail ...string) (*outbox, *postbox) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p := &postbox{posted: map[string]int{}, fail: map[string]bool{}, woken: map[string]int{}}
	for _, f := range fail {
		p.fail[f] = true
	}
	o := newOutbox(ctx, p.post, p.wake)
	o.start()
	return o, p
}

func TestOutboxWritesEachLetterOnceAndWakesItsOwner(t *testing.T) {
	o, p := startOutbox(t)
	o.offer("a", letters("1", "2", "3"))
	require.Eventually(t, func() bool { return len(o.delivered("a")) == 3 }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return p.count(p.woken, "a") == 1 }, 10*time.Second, 10*time.Millisecond)

	// The owner stored the cursor of 1 and 2 and offers what follows,
	// with a new event: only that one is written.
	o.offer("a", letters("3", "4"))
	require.Eventually(t, func() bool { return len(o.delivered("a")) == 2 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{"3", "4"}, ids(o.delivered("a")))
	for _, id := range []string{"1", "2", "3", "4"} {
		assert.Equal(t, 1, p.count(p.posted, id), "event %s", id)
	}

	// Nothing left after the cursor: the box goes.
	o.offer("a", nil)
	assert.Empty(t, o.delivered("a"))
}

func TestOutboxDeliversOnlyAnUnbrokenRunAndRetries(t *testing.T) {
	o, p := startOutbox(t, "2")
	o.offer("a", letters("1", "2", "3"))
	// 2 is refused once: it is written again, and no letter twice.
	require.Eventually(t, func() bool { return len(o.delivered("a")) == 3 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{"1", "2", "3"}, ids(o.delivered("a")))
	assert.Equal(t, "c-3", o.delivered("a")[2].ev.Cursor)
	for _, id := range []string{"1", "2", "3"} {
		assert.Equal(t, 1, p.count(p.posted, id), "event %s", id)
	}
}

func TestOutboxForgetsAGoneOwner(t *testing.T) {
	o, p := startOutbox(t, "1")
	o.offer("a", letters("1"))
	o.drop("a")
	assert.Empty(t, o.delivered("a"))
	// The retry finds nothing to write, and wakes nobody.
	o.offer("b", letters("9"))
	require.Eventually(t, func() bool { return p.count(p.woken, "b") == 1 }, 10*time.Second, 10*time.Millisecond)
	assert.Zero(t, p.count(p.woken, "a"))
}

func TestOutboxDeliveredPrefix(t *testing.T) {
	o := &outbox{boxes: map[string]*box{"a": {letters: letters("1", "2", "3"), sent: map[string]bool{"1": true, "3": true}}}}
	assert.Equal(t, []string{"1"}, ids(o.delivered("a")))
}
