package common

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
)

// Status is what the reconcile skeletons of Instances and pools share: a
// condition is set and, when that is news, recorded as an Event; and the
// run remembers when to look at the object again.
type Status struct {
	recorder record.EventRecorder
	after    time.Duration
}

// NewStatus records Events with recorder.
func NewStatus(recorder record.EventRecorder) Status { return Status{recorder: recorder} }

// SetCondition records a condition of obj. An Event goes out on a transition
// (its status or reason changed) and, for a warning, on a new message too,
// whose details matter; a new message of progress (a percentage) updates
// the condition quietly. The Event's type is the reason's (v1.EventType).
func (s *Status) SetCondition(obj runtime.Object, conds *[]metav1.Condition, generation int64,
	condType string, status metav1.ConditionStatus, reason, message string) {
	old := conditions.Get(*conds, condType)
	transition := old == nil || old.Status != status || old.Reason != reason
	if !conditions.Set(conds, generation, condType, status, reason, message) {
		return
	}
	if transition || v1.IsWarning(reason) {
		s.recorder.Event(obj, v1.EventType(reason), reason, message)
	}
}

// Eventf records an Event of the reason's type.
func (s *Status) Eventf(obj runtime.Object, reason, messageFmt string, args ...interface{}) {
	Eventf(s.recorder, obj, reason, messageFmt, args...)
}

// Requeue asks to look again within d; the shortest request of a run wins.
func (s *Status) Requeue(d time.Duration) {
	if d <= 0 {
		d = time.Second
	}
	if s.after == 0 || d < s.after {
		s.after = d
	}
}

// After is when the run asked to look again; zero when only a change of the
// object or of what it depends on should bring it back.
func (s *Status) After() time.Duration { return s.after }

// Eventf records an Event whose type is the reason's.
func Eventf(recorder record.EventRecorder, obj runtime.Object, reason, messageFmt string, args ...interface{}) {
	recorder.Eventf(obj, v1.EventType(reason), reason, messageFmt, args...)
}
