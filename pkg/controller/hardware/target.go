package hardware

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/reconcile"
)

// target is what the chain's steps work on: a pass over the object whose
// spec asks for power and whose status keeps the hardware status. The
// steps never hold the pointers it returns across Persist, which replaces
// the working copy.
type target interface {
	Name() string
	// SetCondition, Eventf (about the object: the machine's Events go to
	// the node once it exists), Requeue, After, Changed and Persist are
	// the pass's (see reconcile.Pass).
	SetCondition(condType string, status metav1.ConditionStatus, reason, message string)
	Eventf(reason, messageFmt string, args ...interface{})
	Requeue(d time.Duration)
	After() time.Duration
	Changed() bool
	Persist() error

	// reference names the object in an Event.
	reference() corev1.ObjectReference
	powerSpec() v1.PowerSpec
	// generation is the spec's generation.
	generation() int64
	hardware() *v1.HardwareStatus
	// joined reports whether the machine's node has joined the cluster:
	// power actions then wait for its maintenance mode.
	joined() bool
	// powerRecheck is how long to wait between two checks of a power
	// action's effect, given the configured poll interval.
	powerRecheck(poll time.Duration) time.Duration
	// deleting reports whether the object is going: only its events are
	// forwarded then.
	deleting() bool
}

// objectPass is the part of a target every kind shares: the pass over its
// object, and what the steps read of any object.
type objectPass[O reconcile.Object, S any] struct {
	*reconcile.Pass[O, S]
	// kind is the object's Kind, as an Event names it.
	kind string
}

func (p objectPass[O, S]) generation() int64 { return p.Obj.GetGeneration() }
func (p objectPass[O, S]) deleting() bool    { return p.Obj.GetDeletionTimestamp() != nil }
func (p objectPass[O, S]) reference() corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: v1.SchemeGroupVersion.String(), Kind: p.kind, Name: p.Obj.GetName(), UID: p.Obj.GetUID()}
}

// instanceTarget is an Instance: a server the addon provisioned.
type instanceTarget struct {
	objectPass[*v1.Instance, v1.InstanceStatus]
}

// newInstanceTarget starts a pass over inst. The chain's writes carry
// only what it changed: the provisioning chain keeps the rest.
func (h *Handler) newInstanceTarget(inst *v1.Instance) *instanceTarget {
	kind := reconcile.Kind[*v1.Instance, v1.InstanceStatus]{
		Name:         "Instance",
		Status:       func(i *v1.Instance) *v1.InstanceStatus { return &i.Status },
		Conditions:   func(i *v1.Instance) *[]metav1.Condition { return &i.Status.Conditions },
		UpdateStatus: func(i *v1.Instance) (*v1.Instance, error) { return h.instances.UpdateStatus(i) },
		EnqueueAfter: func(name string, after time.Duration) { h.instances.EnqueueAfter(name, after) },
		Recorder:     h.recorder,
	}
	return &instanceTarget{objectPass[*v1.Instance, v1.InstanceStatus]{reconcile.NewPass(kind, inst), "Instance"}}
}

func (t *instanceTarget) powerSpec() v1.PowerSpec      { return t.Obj.Spec.PowerSpec }
func (t *instanceTarget) hardware() *v1.HardwareStatus { return &t.Obj.Status.HardwareStatus }
func (t *instanceTarget) joined() bool                 { return t.Obj.Status.JoinedAt != nil }

// powerRecheck is the poll interval: the Metal API is built for it.
func (t *instanceTarget) powerRecheck(poll time.Duration) time.Duration { return poll }
