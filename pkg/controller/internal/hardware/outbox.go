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

// pendingEvent is one machine event to forward, and the object its
// Kubernetes Event involves.
type pendingEvent struct {
	ev       machine.Event
	involved *involvedObject
}

// involvedObject is what one run's Events involve: the target that names
// them (with each event's ID), the object they are about, and the time
// that stands in for an event without one.
type involvedObject struct {
	owner string
	ref   corev1.ObjectReference
	at    time.Time
}

// Outbox writes the Events of the addon's own servers on workers of its
// own. A fleet provisioning at once makes about ten device events per
// server, and each Event waits its turn in a client-side limit: written in
// the Instance workers, they would hold up every server's provisioning
// behind them. The Instance's pass gives the outbox each run's new events
// and takes back, at its next run, the events written: their cursor is
// stored only then, so a crash in between writes an Event again at most,
// which its name, derived from the event, turns into AlreadyExists. Once a
// key's events are all written, its owner runs again to store the cursor.
type Outbox struct {
	ctx   context.Context
	post  func(context.Context, *corev1.Event) error
	queue workqueue.TypedRateLimitingInterface[string]
	// onWritten re-runs the owner of key.
	onWritten func(key string)

	mu       sync.Mutex
	backlogs map[string]*backlog
}

// backlog is one owner's events after the cursor it stored, oldest first,
// and which of them are written.
type backlog struct {
	events  []pendingEvent
	written map[string]bool
}

func newOutbox(ctx context.Context, post func(context.Context, *corev1.Event) error, onWritten func(key string)) *Outbox {
	return &Outbox{
		ctx:  ctx,
		post: post,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "hardware-events"}),
		onWritten: onWritten,
		backlogs:  map[string]*backlog{},
	}
}

// Start runs the workers until ctx ends.
func (o *Outbox) Start() {
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

// offer replaces key's events with those after the cursor its owner
// stored now. Events written already stay written.
func (o *Outbox) offer(key string, events []pendingEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(events) == 0 {
		delete(o.backlogs, key)
		return
	}
	b := o.backlogs[key]
	if b == nil {
		b = &backlog{written: map[string]bool{}}
		o.backlogs[key] = b
	}
	written := map[string]bool{}
	unwritten := false
	for _, e := range events {
		if b.written[e.ev.ID] {
			written[e.ev.ID] = true
		} else {
			unwritten = true
		}
	}
	b.events, b.written = events, written
	if unwritten {
		o.queue.Add(key)
	}
}

// written returns key's events written so far, in order: the longest run
// of them from the first, which the owner's cursor may now cover.
func (o *Outbox) written(key string) []pendingEvent {
	o.mu.Lock()
	defer o.mu.Unlock()
	b := o.backlogs[key]
	if b == nil {
		return nil
	}
	n := 0
	for n < len(b.events) && b.written[b.events[n].ev.ID] {
		n++
	}
	return append([]pendingEvent(nil), b.events[:n]...)
}

// Drop forgets key: its owner is gone.
func (o *Outbox) Drop(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.backlogs, key)
}

// next writes one key's events; false once the queue shut down.
func (o *Outbox) next() bool {
	key, shutdown := o.queue.Get()
	if shutdown {
		return false
	}
	defer o.queue.Done(key)
	wrote := false
	for {
		e, ok := o.firstUnwritten(key)
		if !ok {
			break
		}
		if err := o.post(o.ctx, e.kubeEvent()); err != nil {
			// The backoff brings the key back; what was written until
			// now waits for the owner's next run.
			logrus.Warnf("hardware events of %s: %v", key, err)
			o.queue.AddRateLimited(key)
			return true
		}
		o.markWritten(key, e.ev.ID)
		wrote = true
	}
	o.queue.Forget(key)
	if wrote {
		o.onWritten(key)
	}
	return true
}

// firstUnwritten is key's first event not written yet.
func (o *Outbox) firstUnwritten(key string) (pendingEvent, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	b := o.backlogs[key]
	if b == nil {
		return pendingEvent{}, false
	}
	for _, e := range b.events {
		if !b.written[e.ev.ID] {
			return e, true
		}
	}
	return pendingEvent{}, false
}

func (o *Outbox) markWritten(key, id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if b := o.backlogs[key]; b != nil {
		b.written[id] = true
	}
}
