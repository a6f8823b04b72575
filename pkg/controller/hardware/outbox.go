package hardware

import (
	"context"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/harvester/harvester-equinix-addon/pkg/machine"
)

// outboxWorkers write the outbox's Events. The client-side limit of the
// outbox's own client sets their pace; two hide an apiserver round trip.
const outboxWorkers = 2

// letter is one machine event to hand on, and what its Event is about.
type letter struct {
	ev    machine.Event
	about *subject
}

// subject is what one run's Events are about: the target that names them
// (with each event's ID), the object they involve, and the time that
// stands in for an event without one.
type subject struct {
	owner string
	ref   corev1.ObjectReference
	at    time.Time
}

// outbox writes the Events of the addon's own servers on workers of its
// own. A fleet provisioning at once makes about ten device events per
// server, and each Event waits its turn in a client-side limit: written in
// the Instance workers, they would hold up every server's provisioning
// behind them. The Instance handler hands the outbox each run's new events
// and takes back, at its next run, the letters written: their cursor is
// stored only then, so a crash in between writes an Event again at most,
// which its name, derived from the event, turns into AlreadyExists. Once a
// key's letters are all written, its owner runs again to store the cursor.
type outbox struct {
	ctx   context.Context
	post  func(context.Context, *corev1.Event) error
	queue workqueue.TypedRateLimitingInterface[string]
	// written re-runs the owner of key.
	written func(key string)

	mu    sync.Mutex
	boxes map[string]*box
}

// box is one owner's letters after the cursor it stored, oldest first,
// and which of them are written.
type box struct {
	letters []letter
	sent    map[string]bool
}

func newOutbox(ctx context.Context, post func(context.Context, *corev1.Event) error, written func(key string)) *outbox {
	return &outbox{
		ctx:  ctx,
		post: post,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "hardware-events"}),
		written: written,
		boxes:   map[string]*box{},
	}
}

// start runs the workers until ctx ends.
func (o *outbox) start() {
	for range outboxWorkers {
		go func() {
			for o.next() {
			}
		}()
	}
	go func() {
		<-o.ctx.Done()
		o.queue.ShutDown()
	}()
}

// offer replaces key's letters with those after the cursor its owner
// stored now. Letters written already stay written.
func (o *outbox) offer(key string, letters []letter) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(letters) == 0 {
		delete(o.boxes, key)
		return
	}
	b := o.boxes[key]
	if b == nil {
		b = &box{sent: map[string]bool{}}
		o.boxes[key] = b
	}
	sent := map[string]bool{}
	unsent := false
	for _, l := range letters {
		if b.sent[l.ev.ID] {
			sent[l.ev.ID] = true
		} else {
			unsent = true
		}
	}
	b.letters, b.sent = letters, sent
	if unsent {
		o.queue.Add(key)
	}
}

// delivered returns key's letters written so far, in order: the longest
// run of them from the first, which the owner's cursor may now cover.
func (o *outbox) delivered(key string) []letter {
	o.mu.Lock()
	defer o.mu.Unlock()
	b := o.boxes[key]
	if b == nil {
		return nil
	}
	n := 0
	for n < len(b.letters) && b.sent[b.letters[n].ev.ID] {
		n++
	}
	return append([]letter(nil), b.letters[:n]...)
}

// drop forgets key: its owner is gone.
func (o *outbox) drop(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.boxes, key)
}

// next writes one key's letters; false once the queue shut down.
func (o *outbox) next() bool {
	key, shutdown := o.queue.Get()
	if shutdown {
		return false
	}
	defer o.queue.Done(key)
	wrote := false
	for {
		l, ok := o.unsent(key)
		if !ok {
			break
		}
		if err := o.post(o.ctx, l.event()); err != nil {
			// The backoff brings the key back; what was written until
			// now waits for the owner's next run.
			logrus.Warnf("hardware events of %s: %v", key, err)
			o.queue.AddRateLimited(key)
			return true
		}
		o.markSent(key, l.ev.ID)
		wrote = true
	}
	o.queue.Forget(key)
	if wrote {
		o.written(key)
	}
	return true
}

// unsent is key's first letter not written yet.
func (o *outbox) unsent(key string) (letter, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	b := o.boxes[key]
	if b == nil {
		return letter{}, false
	}
	for _, l := range b.letters {
		if !b.sent[l.ev.ID] {
			return l, true
		}
	}
	return letter{}, false
}

func (o *outbox) markSent(key, id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if b := o.boxes[key]; b != nil {
		b.sent[id] = true
	}
}
