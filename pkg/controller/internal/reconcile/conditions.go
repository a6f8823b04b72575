package reconcile

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
)

// ConditionRecorder sets an object's conditions and records an Event when
// one of them is news. The Event's type is the reason's (v1.EventType).
type ConditionRecorder struct {
	events record.EventRecorder
}

// NewConditionRecorder records Events with events.
func NewConditionRecorder(events record.EventRecorder) ConditionRecorder {
	return ConditionRecorder{events: events}
}

// Set records a condition of obj. An Event goes out on a transition (its
// status or reason changed) and, for a warning, on a new message too,
// whose details matter; a new message of progress (a percentage) updates
// the condition quietly.
func (c ConditionRecorder) Set(obj runtime.Object, conds *[]metav1.Condition, generation int64,
	condType string, status metav1.ConditionStatus, reason, message string) {
	old := conditions.Get(*conds, condType)
	transition := old == nil || old.Status != status || old.Reason != reason
	if !conditions.Set(conds, generation, condType, status, reason, message) {
		return
	}
	if transition || equinixv1.IsWarning(reason) {
		c.events.Event(obj, equinixv1.EventType(reason), reason, message)
	}
}

// Eventf records an Event about obj, of the reason's type.
func (c ConditionRecorder) Eventf(obj runtime.Object, reason, messageFmt string, args ...interface{}) {
	c.events.Eventf(obj, equinixv1.EventType(reason), reason, messageFmt, args...)
}
