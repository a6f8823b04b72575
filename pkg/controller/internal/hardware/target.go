package hardware

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	hardwarev1 "github.com/harvester/harvester-equinix-addon/pkg/apis/hardware/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/reconcile"
)

// Target is what the chain's steps work on: a pass over an object whose
// status embeds hardwarev1.HardwareStatus. An Instance is one; a
// kind of another package that maps a node to its BMC is another, and runs
// the same Steps. The steps never hold the pointers it returns across
// Persist, which replaces the working copy.
//
// How a target asks for power is one of two: a wanted state in its spec
// (DeclaredPower, the Instance's spec.powerState and rebootRequestedAt),
// or one operation at a time (RequestedPower, what Harvester's node action
// writes into Seeder's Inventory). A target that is neither gets no power
// step.
type Target interface {
	Name() string
	// SetCondition, Eventf (about the object: the machine's Events go to
	// the node once it exists), Requeue, After, Changed, Persist and
	// PersistRecord are the pass's (see reconcile.Pass); ObjectPass brings
	// them along.
	SetCondition(condType string, status metav1.ConditionStatus, reason, message string)
	Eventf(reason, messageFmt string, args ...interface{})
	Requeue(d time.Duration)
	After() time.Duration
	Changed() bool
	Persist() error
	PersistRecord(record func()) error
	// Reference names the object in an Event.
	Reference() corev1.ObjectReference
	// Generation is the spec's generation.
	Generation() int64
	// Deleting reports whether the object is going: only its events are
	// forwarded then.
	Deleting() bool

	Hardware() *hardwarev1.HardwareStatus
	// ForwardsEvents reports whether the machine's events become
	// Kubernetes Events. When it is false they are still read (a BMC's
	// poll is what reads its health and power), and the cursor passes
	// them, so that turning it on later forwards only what comes after.
	ForwardsEvents() bool
	// Joined reports whether the machine's node has joined the cluster:
	// power actions then wait for its maintenance mode.
	Joined() bool
	// PowerRecheck is how long to wait between two checks of a power
	// action's effect, given the configured poll interval.
	PowerRecheck(poll time.Duration) time.Duration
}

// DeclaredPower is a Target whose spec says which power its server should
// have (v1.PowerSpec); a request follows each difference.
type DeclaredPower interface {
	PowerSpec() equinixv1.PowerSpec
}

// RequestedPower is a Target that asks for one power operation at a time,
// each carried out by exactly one command and then ended, whatever came of
// it, so that the next may be asked for.
type RequestedPower interface {
	// PowerRequest is the action asked for and not yet taken up, if any.
	PowerRequest() (action hardwarev1.PowerAction, ok bool)
	// PowerAccepted records that the request is taken up; it is stored
	// before the command.
	PowerAccepted(action hardwarev1.PowerAction)
	// PowerEnded records how the request ended, in the same write as the
	// chain's own record of it.
	PowerEnded(action hardwarev1.PowerAction, ok bool)
}

// ObjectPass is the part of a Target every kind shares: the pass over its
// object, and what the steps read of any object.
type ObjectPass[O reconcile.Object, S any] struct {
	*reconcile.Pass[O, S]
	// Kind is the object's Kind, as an Event names it.
	Kind string
	// APIVersion is the Kind's group and version; the addon's own
	// (equinix.harvesterhci.io/v1) when empty.
	APIVersion string
}

// Generation is the object's generation.
func (p ObjectPass[O, S]) Generation() int64 { return p.Obj.GetGeneration() }

// Deleting reports whether the object is being deleted.
func (p ObjectPass[O, S]) Deleting() bool { return p.Obj.GetDeletionTimestamp() != nil }

// Reference names the object in an Event.
func (p ObjectPass[O, S]) Reference() corev1.ObjectReference {
	apiVersion := p.APIVersion
	if apiVersion == "" {
		apiVersion = equinixv1.SchemeGroupVersion.String()
	}
	return corev1.ObjectReference{APIVersion: apiVersion, Kind: p.Kind, Namespace: p.Obj.GetNamespace(), Name: p.Obj.GetName(), UID: p.Obj.GetUID()}
}

// PersistRecord stores what record puts on the status now; when another
// writer came first, record is applied to the live object and written
// again (reconcile.Pass.PersistOutcome). record works on the working copy
// through the target, which the retry replaces.
func (p ObjectPass[O, S]) PersistRecord(record func()) error {
	return p.PersistOutcome(func(*S) { record() })
}
