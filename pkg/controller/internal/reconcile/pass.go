package reconcile

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
)

// Object is an API object a chain reconciles.
type Object interface {
	runtime.Object
	metav1.Object
}

// Kind is how the skeleton reads, compares and writes the status of one
// kind of object, S being its status type, and brings an object back.
type Kind[O Object, S any] struct {
	// Name names the kind in errors: "updating status of <Name> <object>".
	Name string
	// Status is the object's status, Conditions its conditions.
	Status     func(O) *S
	Conditions func(O) *[]metav1.Condition
	// UpdateStatus writes the status and returns the object written.
	UpdateStatus func(O) (O, error)
	// EnqueueAfter brings the object back after a while.
	EnqueueAfter func(name string, after time.Duration)
	// Recorder records the Events of conditions and steps.
	Recorder record.EventRecorder

	// Prepare, when set, fills what each write carries beside the steps'
	// changes (observedGeneration, conditions derived from the others)
	// before the status is compared with the one stored.
	Prepare func(O)
	// Wrote, when set, is called after each write with the status stored
	// before it and the object written.
	Wrote func(stored *S, written O)
	// Get, when set, reads the live object, so that an outcome whose write
	// met another writer's is put on that writer's object and written
	// again (PersistOutcome).
	Get func(name string) (O, error)
	// Hold, when set, says how long the final write of a changed status
	// may wait (zero: not at all); the pass asks to look again then, and
	// that pass writes what it finds.
	Hold func(next O, stored *S) time.Duration
	// Quiet, when set, puts back on next what the stored status says where
	// a difference alone is not worth a write (a time of bookkeeping that
	// rides along with other changes); it runs after Prepare, before the
	// status is compared with the one stored.
	Quiet func(next O, stored *S)
}

// Pass is one reconcile of one object. Steps change Obj's status, set
// conditions and ask to Requeue; Finish writes the status once at the end.
// Obj is replaced by each write, so steps hold no pointer into it across
// one.
type Pass[O Object, S any] struct {
	// Obj is the working copy.
	Obj O
	// stored is the status as last written or read.
	stored     S
	kind       Kind[O, S]
	conditions ConditionRecorder
	after      time.Duration
	// onStored are called once the final write succeeded.
	onStored []func(stepErr error)
}

// NewPass starts a pass over a copy of obj; obj itself (a cached object)
// is never changed.
func NewPass[O Object, S any](kind Kind[O, S], obj O) *Pass[O, S] {
	p := &Pass[O, S]{kind: kind, conditions: NewConditionRecorder(kind.Recorder)}
	p.reset(obj)
	return p
}

func copyOf[O Object](obj O) O { return obj.DeepCopyObject().(O) }

// reset makes obj, as stored, the working copy.
func (p *Pass[O, S]) reset(obj O) {
	p.Obj = copyOf(obj)
	p.stored = *p.kind.Status(copyOf(obj))
}

// Name is the object's name.
func (p *Pass[O, S]) Name() string { return p.Obj.GetName() }

// Status is the working copy's status.
func (p *Pass[O, S]) Status() *S { return p.kind.Status(p.Obj) }

// Stored is the status as stored; steps only read it.
func (p *Pass[O, S]) Stored() *S { return &p.stored }

// SetCondition sets a condition of the object (see ConditionRecorder).
func (p *Pass[O, S]) SetCondition(condType string, status metav1.ConditionStatus, reason, message string) {
	p.conditions.Set(p.Obj, p.kind.Conditions(p.Obj), p.Obj.GetGeneration(), condType, status, reason, message)
}

// Eventf records an Event about the object, of the reason's type.
func (p *Pass[O, S]) Eventf(reason, messageFmt string, args ...interface{}) {
	p.conditions.Eventf(p.Obj, reason, messageFmt, args...)
}

// Requeue asks to look again within d; the shortest request of a pass
// wins, and an immediate one waits a second, so that a pass never spins.
func (p *Pass[O, S]) Requeue(d time.Duration) {
	if d <= 0 {
		d = time.Second
	}
	if p.after == 0 || d < p.after {
		p.after = d
	}
}

// After is when the pass asked to look again; zero when only a change of
// the object or of what it depends on should bring it back.
func (p *Pass[O, S]) After() time.Duration { return p.after }

// Changed reports whether the status differs from the one stored.
func (p *Pass[O, S]) Changed() bool {
	if p.kind.Prepare != nil {
		p.kind.Prepare(p.Obj)
	}
	if p.kind.Quiet != nil {
		p.kind.Quiet(p.Obj, &p.stored)
	}
	return !equality.Semantic.DeepEqual(p.stored, *p.Status())
}

// Persist writes the status now, when it changed: what a step did so far
// (an intent before the call it announces, a device ID) then survives a
// crash before the next step.
func (p *Pass[O, S]) Persist() error {
	if !p.Changed() {
		return nil
	}
	written, err := p.kind.UpdateStatus(p.Obj)
	if err != nil {
		return fmt.Errorf("updating status of %s %s: %w", p.kind.Name, p.Name(), err)
	}
	if p.kind.Wrote != nil {
		p.kind.Wrote(&p.stored, written)
	}
	p.reset(written)
	return nil
}

// PersistOutcome stores the outcome of a call that must not be sent again,
// which record puts on the status. If another writer of the status came
// first, the outcome is put on the live object and written again, rather
// than lost to the conflict and the call repeated on the next pass; what
// else the pass changed is recomputed by the rest of it.
func (p *Pass[O, S]) PersistOutcome(record func(*S)) error {
	record(p.Status())
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		err := p.Persist()
		if !apierrors.IsConflict(err) || p.kind.Get == nil {
			return err
		}
		live, gerr := p.kind.Get(p.Name())
		if gerr != nil {
			return gerr
		}
		p.reset(live)
		record(p.Status())
		return err
	})
}

// OnStored has publish called once Finish stored the status (or found
// nothing to store), with the steps' error: what may be published only of
// a stored status, such as a metric that must not count twice when a
// failed write is retried.
func (p *Pass[O, S]) OnStored(publish func(stepErr error)) {
	p.onStored = append(p.onStored, publish)
}

// Finish is the tail of every pass: the status is written once (unless
// Hold lets it wait), and the object comes back when the pass asked for
// it, unless a step failed: the work queue's backoff brings it back then.
func (p *Pass[O, S]) Finish(stepErr error) (O, error) {
	if err := p.store(stepErr); err != nil {
		return p.Obj, errors.Join(stepErr, err)
	}
	if after := p.After(); after > 0 && stepErr == nil {
		p.kind.EnqueueAfter(p.Name(), after)
	}
	return p.Obj, stepErr
}

// store is Finish's write, and what is published once it is done.
func (p *Pass[O, S]) store(stepErr error) error {
	if p.kind.Hold != nil && p.Changed() {
		if wait := p.kind.Hold(p.Obj, &p.stored); wait > 0 {
			p.Requeue(wait)
			return nil
		}
	}
	if err := p.Persist(); err != nil {
		return err
	}
	for _, publish := range p.onStored {
		publish(stepErr)
	}
	return nil
}
