package hardware

import (
	"time"

	corev1 "k8s.io/api/core/v1"
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
	// powerRecheck is how long to wait between two checks of a power
	// action's effect, given the configured poll interval.
	powerRecheck(poll time.Duration) time.Duration
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
	workingCopy[*v1.Instance]
}

func newInstanceTarget(client equinixcontrollers.InstanceClient, inst *v1.Instance) *instanceTarget {
	return &instanceTarget{newWorkingCopy("Instance", inst, func(i *v1.Instance) any { return i.Status },
		func(i *v1.Instance) *[]metav1.Condition { return &i.Status.Conditions }, client.UpdateStatus)}
}

func (t *instanceTarget) powerSpec() v1.PowerSpec      { return t.obj.Spec.PowerSpec }
func (t *instanceTarget) hardware() *v1.HardwareStatus { return &t.obj.Status.HardwareStatus }
func (t *instanceTarget) joined() bool                 { return t.obj.Status.JoinedAt != nil }

// powerRecheck is the poll interval: the Metal API is built for it.
func (t *instanceTarget) powerRecheck(poll time.Duration) time.Duration { return poll }
