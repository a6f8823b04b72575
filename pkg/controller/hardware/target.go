package hardware

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/common"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
)

// target is what the chain's steps work on: the object whose spec asks
// for power and whose status keeps the hardware status. The steps never
// hold the pointers it returns across persist, which replaces the working
// copy.
type target interface {
	// object is the working copy: its conditions, and the Events about the
	// machine while no node exists.
	object() runtime.Object
	name() string
	// reference names the object in an Event.
	reference() corev1.ObjectReference
	powerSpec() v1.PowerSpec
	// generation is the spec's generation.
	generation() int64
	hardware() *v1.HardwareStatus
	setCondition(s *common.Status, condType string, status metav1.ConditionStatus, reason, message string)
	// joined reports whether the machine's node has joined the cluster:
	// power actions then wait for its maintenance mode.
	joined() bool
	// deleting reports whether the object is going: only its events are
	// forwarded then.
	deleting() bool
	// changed reports whether the status differs from the one stored.
	changed() bool
	// persist writes the status now, when it changed.
	persist() error
}

// instanceTarget is an Instance: a server the addon provisioned.
type instanceTarget struct {
	client    equinixcontrollers.InstanceClient
	inst      *v1.Instance
	persisted v1.InstanceStatus
}

func newInstanceTarget(client equinixcontrollers.InstanceClient, inst *v1.Instance) *instanceTarget {
	return &instanceTarget{client: client, inst: inst.DeepCopy(), persisted: *inst.Status.DeepCopy()}
}

func (t *instanceTarget) object() runtime.Object { return t.inst }
func (t *instanceTarget) name() string           { return t.inst.Name }
func (t *instanceTarget) reference() corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: v1.SchemeGroupVersion.String(), Kind: "Instance", Name: t.inst.Name, UID: t.inst.UID}
}
func (t *instanceTarget) powerSpec() v1.PowerSpec      { return t.inst.Spec.PowerSpec }
func (t *instanceTarget) hardware() *v1.HardwareStatus { return &t.inst.Status.HardwareStatus }
func (t *instanceTarget) generation() int64            { return t.inst.Generation }
func (t *instanceTarget) joined() bool                 { return t.inst.Status.JoinedAt != nil }
func (t *instanceTarget) deleting() bool               { return t.inst.DeletionTimestamp != nil }
func (t *instanceTarget) setCondition(s *common.Status, condType string, status metav1.ConditionStatus, reason, message string) {
	s.SetCondition(t.inst, &t.inst.Status.Conditions, t.inst.Generation, condType, status, reason, message)
}

func (t *instanceTarget) changed() bool {
	return !equality.Semantic.DeepEqual(t.persisted, t.inst.Status)
}

func (t *instanceTarget) persist() error {
	if !t.changed() {
		return nil
	}
	updated, err := t.client.UpdateStatus(t.inst)
	if err != nil {
		return fmt.Errorf("updating status of instance %s: %w", t.inst.Name, err)
	}
	t.inst = updated.DeepCopy()
	t.persisted = *updated.Status.DeepCopy()
	return nil
}
