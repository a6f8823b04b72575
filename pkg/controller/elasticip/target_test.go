package elasticip

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func readyNode(name string, ready corev1.ConditionStatus, since time.Time) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready,
			LastTransitionTime: metav1.NewTime(since)}}},
	}
}

func TestHealth(t *testing.T) {
	cases := []struct {
		name       string
		node       func() *corev1.Node
		status     metav1.ConditionStatus
		reason     string
		wantEvent  bool
		wantLookIn time.Duration
	}{
		{name: "ready", node: func() *corev1.Node { return readyNode("n", corev1.ConditionTrue, now.Add(-time.Hour)) },
			status: metav1.ConditionTrue, reason: equinixv1.ReasonHostHealthy, wantEvent: true},
		{name: "maintenance by annotation", node: func() *corev1.Node {
			n := readyNode("n", corev1.ConditionTrue, now)
			n.Annotations["harvesterhci.io/maintain-status"] = "completed"
			n.Spec.Unschedulable = true
			return n
		}, status: metav1.ConditionFalse, reason: equinixv1.ReasonHostInMaintenance, wantEvent: true},
		{name: "maintenance requested", node: func() *corev1.Node {
			n := readyNode("n", corev1.ConditionTrue, now)
			n.Annotations["harvesterhci.io/drain-requested"] = "true"
			return n
		}, status: metav1.ConditionFalse, reason: equinixv1.ReasonHostInMaintenance, wantEvent: true},
		{name: "maintenance condition", node: func() *corev1.Node {
			n := readyNode("n", corev1.ConditionTrue, now)
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: harvester.NodeConditionMaintenanceMode, Status: corev1.ConditionTrue, Reason: "Evacuating"})
			return n
		}, status: metav1.ConditionFalse, reason: equinixv1.ReasonHostInMaintenance, wantEvent: true},
		{name: "cordoned", node: func() *corev1.Node {
			n := readyNode("n", corev1.ConditionTrue, now)
			n.Spec.Unschedulable = true
			return n
		}, status: metav1.ConditionFalse, reason: equinixv1.ReasonHostCordoned, wantEvent: true},
		{name: "not ready for longer than kube-vip needs", node: func() *corev1.Node {
			return readyNode("n", corev1.ConditionFalse, now.Add(-time.Minute))
		}, status: metav1.ConditionFalse, reason: equinixv1.ReasonHostNotReady, wantEvent: true},
		{name: "not ready for a moment: kube-vip is still moving", node: func() *corev1.Node {
			return readyNode("n", corev1.ConditionUnknown, now.Add(-10*time.Second))
		}, status: metav1.ConditionTrue, reason: equinixv1.ReasonHostHealthy, wantEvent: true, wantLookIn: 20*time.Second + 100*time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			h := &Handler{settings: Settings{NotReadyGrace: 30 * time.Second}, recorder: rec, now: func() time.Time { return now }}
			r := h.newRun(&equinixv1.ElasticIP{ObjectMeta: metav1.ObjectMeta{Name: "cluster-vip"}})
			r.health(tc.node())
			c := conditions.Get(r.Obj.Status.Conditions, equinixv1.ElasticIPHostHealthy)
			if assert.NotNil(t, c) {
				assert.Equal(t, tc.status, c.Status)
				assert.Equal(t, tc.reason, c.Reason)
			}
			assert.Equal(t, tc.wantEvent, len(rec.Events) == 1)
			assert.Equal(t, tc.wantLookIn, r.After())

			// The same state again is no news.
			r.health(tc.node())
			assert.Len(t, rec.Events, 1)
		})
	}
}

func TestOlderWins(t *testing.T) {
	early := metav1.NewTime(now)
	late := metav1.NewTime(now.Add(time.Second))
	a := &equinixv1.ElasticIP{ObjectMeta: metav1.ObjectMeta{Name: "b", CreationTimestamp: early}}
	b := &equinixv1.ElasticIP{ObjectMeta: metav1.ObjectMeta{Name: "a", CreationTimestamp: late}}
	assert.True(t, older(a, b))
	assert.False(t, older(b, a))
	b.CreationTimestamp = early
	assert.True(t, older(b, a), "the name breaks a tie")
}

func TestServiceOf(t *testing.T) {
	assert.Equal(t, equinixv1.ServiceReference{Namespace: "kube-system", Name: "ingress-expose"}, serviceOf(&equinixv1.ElasticIP{}))
	ref := &equinixv1.ServiceReference{Namespace: "default", Name: "web"}
	assert.Equal(t, *ref, serviceOf(&equinixv1.ElasticIP{Spec: equinixv1.ElasticIPSpec{Service: ref}}))
}
