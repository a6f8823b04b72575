package fencing

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

func nodeOf(name string, ready bool) *corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}}}
}

func TestQuorum(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*corev1.Node
		held  bool
	}{
		{"one of three", []*corev1.Node{nodeOf("a", false), nodeOf("b", true), nodeOf("c", true)}, false},
		{"half of four", []*corev1.Node{nodeOf("a", false), nodeOf("b", false), nodeOf("c", true), nodeOf("d", true)}, false},
		{"two of three", []*corev1.Node{nodeOf("a", false), nodeOf("b", false), nodeOf("c", true)}, true},
		{"own node NotReady", []*corev1.Node{nodeOf("a", false), nodeOf("own", false), nodeOf("c", true), nodeOf("d", true)}, true},
		{"one of two", []*corev1.Node{nodeOf("a", false), nodeOf("own", true)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := quorum(tt.nodes, "own")
			assert.Equal(t, tt.held, h != nil)
			if h != nil {
				assert.Equal(t, equinixv1.ReasonFenceHeldByQuorum, h.reason)
			}
		})
	}
}

func TestWithTaintTouchesOnlyItsOwn(t *testing.T) {
	unreachable := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	on, changed := withTaint([]corev1.Taint{unreachable}, true)
	assert.True(t, changed)
	assert.Len(t, on, 2)
	assert.Equal(t, unreachable, on[0])
	assert.Equal(t, corev1.TaintNodeOutOfService, on[1].Key)
	assert.Equal(t, equinixv1.TaintOutOfServiceValue, on[1].Value)

	_, changed = withTaint(on, true)
	assert.False(t, changed, "a taint already there is put on again")

	off, changed := withTaint(on, false)
	assert.True(t, changed)
	assert.Equal(t, []corev1.Taint{unreachable}, off)
	_, changed = withTaint(off, false)
	assert.False(t, changed)
}

func TestInMaintenance(t *testing.T) {
	n := nodeOf("a", false)
	in, _ := inMaintenance(n)
	assert.False(t, in)

	asked := n.DeepCopy()
	asked.Annotations = map[string]string{harvester.AnnotationDrainRequested: "true"}
	in, _ = inMaintenance(asked)
	assert.True(t, in, "a node on its way into maintenance mode")

	done := n.DeepCopy()
	done.Annotations = map[string]string{harvester.AnnotationMaintainStatus: "completed"}
	in, _ = inMaintenance(done)
	assert.True(t, in)

	cond := n.DeepCopy()
	cond.Status.Conditions = append(cond.Status.Conditions, corev1.NodeCondition{Type: harvester.NodeConditionMaintenanceMode,
		Status: corev1.ConditionTrue, Reason: "Running"})
	in, _ = inMaintenance(cond)
	assert.True(t, in)
}

// A pass over a node that is Ready and was never fenced leaves the BMC
// alone; any other may read or switch the server's power, so the
// Inventory's pass must read its credentials for it.
func TestUsesMachine(t *testing.T) {
	fenced := func(s metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: equinixv1.BMCFenced, Status: s}}
	}
	for _, tt := range []struct {
		name  string
		f     *Fencer
		conds []metav1.Condition
		node  *corev1.Node
		want  bool
	}{
		{"fencing off", nil, nil, nodeOf("a", false), false},
		{"no node", &Fencer{}, fenced(metav1.ConditionTrue), nil, false},
		{"Ready, never fenced", &Fencer{}, nil, nodeOf("a", true), false},
		{"Ready, fence lifted", &Fencer{}, fenced(metav1.ConditionFalse), nodeOf("a", true), false},
		{"NotReady", &Fencer{}, nil, nodeOf("a", false), true},
		{"Ready, fenced", &Fencer{}, fenced(metav1.ConditionTrue), nodeOf("a", true), true},
		{"Ready, fence unknown", &Fencer{}, fenced(metav1.ConditionUnknown), nodeOf("a", true), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.f.UsesMachine(tt.conds, tt.node))
		})
	}
}
