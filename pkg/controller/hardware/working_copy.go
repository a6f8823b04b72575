package hardware

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/common"
)

// object is what a target's kind is: an API object of this group.
type object interface {
	runtime.Object
	metav1.Object
}

// workingCopy is the object a target's steps change, the status last
// stored, and how to store a new one: the part of a target every kind
// shares.
type workingCopy[O object] struct {
	obj O
	// persisted is the status as stored, a value of the object's status
	// type.
	persisted any
	kind      string
	status    func(O) any
	conds     func(O) *[]metav1.Condition
	update    func(O) (O, error)
}

// newWorkingCopy copies obj of kind; status returns its status by value,
// conds its conditions, and update writes the status.
func newWorkingCopy[O object](kind string, obj O, status func(O) any, conds func(O) *[]metav1.Condition,
	update func(O) (O, error)) workingCopy[O] {
	return workingCopy[O]{obj: copyOf(obj), persisted: status(copyOf(obj)), kind: kind, status: status, conds: conds, update: update}
}

func copyOf[O object](obj O) O { return obj.DeepCopyObject().(O) }

func (w *workingCopy[O]) object() runtime.Object { return w.obj }
func (w *workingCopy[O]) name() string           { return w.obj.GetName() }
func (w *workingCopy[O]) generation() int64      { return w.obj.GetGeneration() }
func (w *workingCopy[O]) deleting() bool         { return w.obj.GetDeletionTimestamp() != nil }
func (w *workingCopy[O]) reference() corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: v1.SchemeGroupVersion.String(), Kind: w.kind, Name: w.obj.GetName(), UID: w.obj.GetUID()}
}
func (w *workingCopy[O]) setCondition(s *common.Status, condType string, status metav1.ConditionStatus, reason, message string) {
	s.SetCondition(w.obj, w.conds(w.obj), w.obj.GetGeneration(), condType, status, reason, message)
}

// changed reports whether the status differs from the one stored.
func (w *workingCopy[O]) changed() bool {
	return !equality.Semantic.DeepEqual(w.persisted, w.status(w.obj))
}

// persist writes the status now, when it changed.
func (w *workingCopy[O]) persist() error {
	if !w.changed() {
		return nil
	}
	updated, err := w.update(w.obj)
	if err != nil {
		return fmt.Errorf("updating status of %s %s: %w", w.kind, w.obj.GetName(), err)
	}
	w.obj = copyOf(updated)
	w.persisted = w.status(copyOf(updated))
	return nil
}
