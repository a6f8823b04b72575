package inventory

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	hardwarev1 "github.com/harvester/harvester-equinix-addon/pkg/apis/hardware/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/fencing"
)

// atRest is an Inventory whose last pass found the Secret and the BMC
// working, at generation 2, then changed as change says.
func atRest(change func(inv *seederv1alpha1.Inventory)) *seederv1alpha1.Inventory {
	inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: seederv1alpha1.InventoryNamespace, Name: "node-1", Generation: 2}}
	inv.Status.Hardware = &seederv1alpha1.HardwareStatus{ObservedGeneration: 2}
	inv.Status.PowerAction.LastJobName = "node-1-reboot-x"
	for _, c := range []string{equinixv1.BMCCredentialsReady, equinixv1.BMCAuthenticated} {
		inv.Status.Conditions = append(inv.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue})
	}
	if change != nil {
		change(inv)
	}
	return inv
}

func setCondition(typ string, status metav1.ConditionStatus) func(*seederv1alpha1.Inventory) {
	return func(inv *seederv1alpha1.Inventory) {
		for i := range inv.Status.Conditions {
			if inv.Status.Conditions[i].Type == typ {
				inv.Status.Conditions[i].Status = status
			}
		}
	}
}

// The Secret is read by a pass that has something for the BMC, and by no
// other: the pass a poll's own status write brings back reads none.
func TestWhichPassNeedsTheBMC(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	completed := metav1.NewTime(now.Add(-time.Minute))
	for _, tc := range []struct {
		name     string
		inv      *seederv1alpha1.Inventory
		readsDue bool
		want     bool
	}{
		{"at rest, nothing due", atRest(nil), false, false},
		{"a poll due, or facts to read", atRest(nil), true, true},
		{"the first pass", &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: seederv1alpha1.InventoryNamespace, Name: "node-1", Generation: 1}}, false, true},
		{"a Secret that did not let the BMC be reached", atRest(setCondition(equinixv1.BMCCredentialsReady, metav1.ConditionFalse)), false, true},
		{"credentials the BMC refused", atRest(setCondition(equinixv1.BMCAuthenticated, metav1.ConditionFalse)), false, true},
		{"a spec not yet seen", atRest(func(inv *seederv1alpha1.Inventory) { inv.Generation = 3 }), false, true},
		{"a power request", atRest(func(inv *seederv1alpha1.Inventory) {
			inv.Spec.PowerActionRequested = seederv1alpha1.PowerOperationReboot
			inv.Status.PowerAction.LastJobName = ""
		}), false, true},
		{"a power request taken up already", atRest(func(inv *seederv1alpha1.Inventory) {
			inv.Spec.PowerActionRequested = seederv1alpha1.PowerOperationReboot
			inv.Status.Hardware.LastPowerAction = &hardwarev1.PowerActionStatus{Action: hardwarev1.PowerActionReboot, Result: hardwarev1.PowerResultSucceeded,
				ObservedGeneration: 2, Completed: &completed}
			inv.Status.PowerAction.LastActionStatus = seederv1alpha1.ActionStatusComplete
			inv.Status.Hardware.PowerState = string(equinixv1.PowerOn)
		}), false, false},
		{"a power request Seeder took and never ended", atRest(func(inv *seederv1alpha1.Inventory) {
			inv.Spec.PowerActionRequested = seederv1alpha1.PowerOperationShutdown
			inv.Status.PowerAction.LastJobName = "node-1-shutdown-x7k2q"
			inv.Status.Hardware = nil
		}), false, true},
		{"a power action under way", atRest(func(inv *seederv1alpha1.Inventory) {
			inv.Status.Hardware.LastPowerAction = &hardwarev1.PowerActionStatus{Action: hardwarev1.PowerActionOff, Result: hardwarev1.PowerResultSent, ObservedGeneration: 2}
		}), false, true},
		{"a power action's effect still checked", atRest(func(inv *seederv1alpha1.Inventory) {
			inv.Status.Hardware.LastPowerAction = &hardwarev1.PowerActionStatus{Action: hardwarev1.PowerActionOff, Result: hardwarev1.PowerResultSucceeded,
				ObservedGeneration: 2, Completed: &completed}
			inv.Status.Hardware.PowerState = string(equinixv1.PowerOn)
		}), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &run{h: &Handler{}, now: now}
			assert.Equal(t, tc.want, r.needsBMC(targetOf(tc.inv), func() bool { return tc.readsDue }, func() bool { return false }))
		})
	}
}

// With fencing on, a pass over a NotReady node, or over a fence not yet
// lifted, needs the BMC although no poll is due: the fence step may read or
// switch the server's power.
func TestFencingPassNeedsTheBMC(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	node := func(ready corev1.ConditionStatus) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
	}
	fenced := func(inv *seederv1alpha1.Inventory) {
		inv.Status.Conditions = append(inv.Status.Conditions, metav1.Condition{Type: equinixv1.BMCFenced, Status: metav1.ConditionTrue})
	}
	for _, tc := range []struct {
		name string
		inv  *seederv1alpha1.Inventory
		node *corev1.Node
		want bool
	}{
		{"Ready node, never fenced", atRest(nil), node(corev1.ConditionTrue), false},
		{"NotReady node", atRest(nil), node(corev1.ConditionFalse), true},
		{"Ready node, fence not lifted", atRest(fenced), node(corev1.ConditionTrue), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &run{h: &Handler{fence: &fencing.Fencer{}}, now: now, node: tc.node}
			assert.Equal(t, tc.want, r.needsBMC(targetOf(tc.inv), func() bool { return false }, func() bool { return false }))
		})
	}
}
