package harvester

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPowerActionsAllowedOnlyInMaintenance(t *testing.T) {
	cond := func(status corev1.ConditionStatus, reason string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{AnnotationMaintainStatus: "completed"}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: NodeConditionMaintenanceMode, Status: status, Reason: reason}}}}
	}
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{"no node", nil, false},
		{"nothing", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, false},
		{"older release: annotation", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{AnnotationMaintainStatus: "running"}}}, true},
		{"evacuating", cond(corev1.ConditionTrue, MaintenanceReasonEvacuating), true},
		{"completed", cond(corev1.ConditionTrue, MaintenanceReasonCompleted), true},
		// The condition decides where it exists, whatever the annotation says.
		{"draining", cond(corev1.ConditionTrue, "Draining"), false},
		{"validation failed", cond(corev1.ConditionFalse, "Error"), false},
		{"drain timed out", cond(corev1.ConditionTrue, "Error"), false},
	} {
		got, why := PowerActionsAllowed(tc.node)
		assert.Equal(t, tc.want, got, "%s: %s", tc.name, why)
		assert.NotEmpty(t, why)
	}
}

func TestMaintenanceModeByRelease(t *testing.T) {
	for v, want := range map[string]bool{"v1.1.2": false, "v1.2.0": true, "v1.4.1": true, "2.0.0": true, "master": false, "": false} {
		assert.Equal(t, want, HasMaintenanceMode(v), v)
	}
	assert.JSONEq(t, `{"spec":{"unschedulable":true}}`, string(MaintenancePatch(false, true)))
	assert.JSONEq(t, `{"metadata":{"annotations":{"harvesterhci.io/drain-requested":"true","harvesterhci.io/drain-forced":"true"}}}`, string(MaintenancePatch(true, true)))
	assert.JSONEq(t, `{"metadata":{"annotations":{"harvesterhci.io/drain-requested":"true"}}}`, string(MaintenancePatch(true, false)))
}
