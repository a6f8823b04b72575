package harvester

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	created = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now     = created.Add(24 * time.Hour)
)

// nodeBuilder builds fixtures fluently; every call returns a fresh copy.
type nodeBuilder struct{ node *corev1.Node }

func newNode(name string) nodeBuilder {
	return nodeBuilder{node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:              name,
		CreationTimestamp: metav1.NewTime(created),
		Labels:            map[string]string{LabelManaged: "true"},
	}}}
}

func (b nodeBuilder) label(k, v string) nodeBuilder {
	n := b.node.DeepCopy()
	n.Labels[k] = v
	return nodeBuilder{node: n}
}

func (b nodeBuilder) annotate(k, v string) nodeBuilder {
	n := b.node.DeepCopy()
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[k] = v
	return nodeBuilder{node: n}
}

func (b nodeBuilder) management() nodeBuilder {
	return b.label(LabelRoleControlPlane, "true").label(LabelRoleEtcd, "true").label(LabelRoleMaster, "true")
}

func (b nodeBuilder) ready(status corev1.ConditionStatus, transition time.Time) nodeBuilder {
	n := b.node.DeepCopy()
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{
		Type:               corev1.NodeReady,
		Status:             status,
		LastTransitionTime: metav1.NewTime(transition),
		LastHeartbeatTime:  metav1.NewTime(now.Add(-10 * time.Second)),
	})
	return nodeBuilder{node: n}
}

func (b nodeBuilder) healthy() nodeBuilder { return b.ready(corev1.ConditionTrue, created) }

func (b nodeBuilder) deleting() nodeBuilder {
	n := b.node.DeepCopy()
	ts := metav1.NewTime(now)
	n.DeletionTimestamp = &ts
	return nodeBuilder{node: n}
}

func (b nodeBuilder) build() *corev1.Node { return b.node.DeepCopy() }

func TestIsManagementNode(t *testing.T) {
	tests := []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{name: "nil", node: nil, want: false},
		{name: "worker", node: newNode("w").build(), want: false},
		{name: "master true", node: newNode("m").label(LabelRoleMaster, "true").build(), want: true},
		{name: "control-plane true", node: newNode("m").label(LabelRoleControlPlane, "true").build(), want: true},
		{name: "etcd only (witness)", node: newNode("m").label(LabelRoleEtcd, "true").label(LabelRoleWitness, "true").build(), want: true},
		{name: "master label decides first", node: newNode("m").label(LabelRoleMaster, "false").label(LabelRoleControlPlane, "true").build(), want: false},
		{name: "empty value", node: newNode("m").label(LabelRoleControlPlane, "").build(), want: false},
		{name: "harvester management role label alone", node: newNode("m").label("node-role.harvesterhci.io/management", "true").build(), want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, IsManagementNode(tc.node))
		})
	}
}

func TestManagementNodes(t *testing.T) {
	m1 := newNode("m1").management().build()
	w1 := newNode("w1").build()
	m2 := newNode("m2").label(LabelRoleEtcd, "true").build()
	assert.Equal(t, []*corev1.Node{m1, m2}, ManagementNodes([]*corev1.Node{m1, w1, nil, m2}))
	assert.Empty(t, ManagementNodes([]*corev1.Node{w1}))
}

func TestNodeReadyCondition(t *testing.T) {
	n := newNode("n").ready(corev1.ConditionFalse, created.Add(time.Hour)).build()
	n.Status.Conditions = append([]corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}}, n.Status.Conditions...)

	c := NodeReadyCondition(n)
	if assert.NotNil(t, c) {
		assert.Equal(t, corev1.ConditionFalse, c.Status)
		c.Status = corev1.ConditionTrue
		assert.Equal(t, corev1.ConditionFalse, n.Status.Conditions[1].Status, "must return a copy")
	}
	assert.Nil(t, NodeReadyCondition(newNode("n").build()))
	assert.Nil(t, NodeReadyCondition(nil))
	assert.False(t, IsNodeReady(n))
	assert.True(t, IsNodeReady(newNode("n").healthy().build()))
}

func TestUnhealthySince(t *testing.T) {
	transition := now.Add(-30 * time.Minute)
	tests := []struct {
		name      string
		node      *corev1.Node
		since     time.Time
		unhealthy bool
	}{
		{name: "ready", node: newNode("n").healthy().build()},
		{name: "not ready uses lastTransitionTime, not heartbeat", node: newNode("n").ready(corev1.ConditionFalse, transition).build(), since: transition, unhealthy: true},
		{name: "unknown", node: newNode("n").ready(corev1.ConditionUnknown, transition).build(), since: transition, unhealthy: true},
		{name: "no Ready condition counts from creation", node: newNode("n").build(), since: created, unhealthy: true},
		{name: "zero transition time counts from creation", node: newNode("n").ready(corev1.ConditionFalse, time.Time{}).build(), since: created, unhealthy: true},
		{name: "future transition is clamped to now", node: newNode("n").ready(corev1.ConditionFalse, now.Add(time.Hour)).build(), since: now, unhealthy: true},
		{name: "nil node", node: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			since, unhealthy := UnhealthySince(tc.node, now)
			assert.Equal(t, tc.unhealthy, unhealthy)
			assert.True(t, tc.since.Equal(since), "since = %v, want %v", since, tc.since)
		})
	}
}

func TestMaintenanceHelpers(t *testing.T) {
	t.Run("RequestMaintenance returns an annotated copy", func(t *testing.T) {
		orig := newNode("n").build()
		got := RequestMaintenance(orig)
		assert.Equal(t, "true", got.Annotations[AnnotationDrainRequested])
		assert.NotContains(t, orig.Annotations, AnnotationDrainRequested, "input must not change")
		assert.True(t, MaintenanceRequested(got))
		assert.False(t, MaintenanceRequested(orig))
		got.Annotations = nil
		assert.Equal(t, orig, newNode("n").build())
	})
	t.Run("RequestMaintenance keeps other annotations", func(t *testing.T) {
		got := RequestMaintenance(newNode("n").annotate("a", "b").build())
		assert.Equal(t, map[string]string{"a": "b", AnnotationDrainRequested: "true"}, got.Annotations)
	})

	tests := []struct {
		name string
		node *corev1.Node
		want MaintenanceState
	}{
		{name: "none", node: newNode("n").build(), want: MaintenanceNone},
		{name: "running", node: newNode("n").annotate(AnnotationMaintainStatus, "running").build(), want: MaintenanceRunning},
		{name: "completed", node: newNode("n").annotate(AnnotationMaintainStatus, "completed").build(), want: MaintenanceCompleted},
		{name: "nil", node: nil, want: MaintenanceNone},
	}
	for _, tc := range tests {
		t.Run("MaintenanceStatus "+tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, MaintenanceStatus(tc.node))
		})
	}
}

func TestIsCordoned(t *testing.T) {
	n := newNode("n").build()
	assert.False(t, IsCordoned(n))
	n.Spec.Unschedulable = true
	assert.True(t, IsCordoned(n))
	assert.False(t, IsCordoned(nil))
}

func TestRemovalKeepsQuorum(t *testing.T) {
	m := func(name string) nodeBuilder { return newNode(name).management().healthy() }
	w := func(name string) nodeBuilder { return newNode(name).healthy() }
	sick := func(b nodeBuilder) nodeBuilder {
		n := b.build()
		n.Status.Conditions[0].Status = corev1.ConditionUnknown
		return nodeBuilder{node: n}
	}
	nodes := func(bs ...nodeBuilder) []*corev1.Node {
		out := make([]*corev1.Node, 0, len(bs))
		for _, b := range bs {
			out = append(out, b.build())
		}
		return out
	}

	tests := []struct {
		name      string
		nodes     []*corev1.Node
		candidate *corev1.Node
		want      bool
		reason    string
	}{
		{name: "worker", nodes: nodes(m("m1"), m("m2"), m("m3"), w("w1")), candidate: w("w1").build(), want: true, reason: "not a management node"},
		{name: "worker being promoted", nodes: nodes(m("m1"), w("w1").annotate(AnnotationPromoteStatus, "running")), candidate: w("w1").annotate(AnnotationPromoteStatus, "running").build(), want: false, reason: "being promoted"},
		{name: "one of three managers", nodes: nodes(m("m1"), m("m2"), m("m3"), w("w1")), candidate: m("m3").build(), want: false, reason: "would leave 2 healthy management node(s) of 2; Harvester needs 3"},
		{name: "only manager", nodes: nodes(m("m1")), candidate: m("m1").build(), want: false, reason: "would leave 0 healthy"},
		{name: "candidate missing from list", nodes: nodes(m("m1"), m("m2")), candidate: m("m3").build(), want: false, reason: "would leave 2 healthy"},
		{name: "dead one of three managers", nodes: nodes(m("m1"), m("m2"), sick(m("m3"))), candidate: sick(m("m3")).build(), want: false, reason: "would leave 2 healthy"},
		{name: "one of four healthy managers", nodes: nodes(m("m1"), m("m2"), m("m3"), m("m4")), candidate: m("m4").build(), want: true, reason: "leaves 3 healthy management nodes of 3"},
		{name: "four managers, one unhealthy", nodes: nodes(m("m1"), m("m2"), sick(m("m3")), m("m4")), candidate: m("m4").build(), want: false, reason: "would leave 2 healthy management node(s) of 3"},
		{name: "four managers, one being deleted", nodes: nodes(m("m1"), m("m2"), m("m3").deleting(), m("m4")), candidate: m("m4").build(), want: false, reason: "would leave 2 healthy"},
		{name: "quorum of a large membership", nodes: nodes(m("m1"), m("m2"), m("m3"), sick(m("m4")), sick(m("m5")), sick(m("m6")), m("m7")), candidate: m("m7").build(), want: false, reason: "3 healthy of 6 etcd members, below the quorum of 4"},
		{name: "promotion running elsewhere", nodes: nodes(m("m1"), m("m2"), m("m3"), m("m4"), w("w1").annotate(AnnotationPromoteStatus, "running")), candidate: m("m4").build(), want: false, reason: "while Harvester promotes w1"},
		{name: "nil candidate", nodes: nodes(m("m1")), candidate: nil, want: false, reason: "no node given"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason := RemovalKeepsQuorum(tc.nodes, tc.candidate)
			assert.Equal(t, tc.want, ok, reason)
			assert.Contains(t, reason, tc.reason)
		})
	}
}

func TestMaintenancePossible(t *testing.T) {
	cp := func(name string) nodeBuilder { return newNode(name).management().healthy() }
	inMaint := func(b nodeBuilder) nodeBuilder { return b.annotate(AnnotationMaintainStatus, "running") }
	tests := []struct {
		name      string
		nodes     []*corev1.Node
		candidate *corev1.Node
		want      bool
		reason    string
	}{
		{name: "worker always", nodes: []*corev1.Node{cp("m1").build()}, candidate: newNode("w1").build(), want: true},
		{name: "single control plane", nodes: []*corev1.Node{cp("m1").build()}, candidate: cp("m1").build(), want: false, reason: "only control-plane node"},
		{name: "exactly three", nodes: []*corev1.Node{cp("m1").build(), cp("m2").build(), cp("m3").build()}, candidate: cp("m3").build(), want: true},
		{name: "another in maintenance", nodes: []*corev1.Node{cp("m1").build(), inMaint(cp("m2")).build(), cp("m3").build()}, candidate: cp("m3").build(), want: false, reason: "there are 2"},
		{name: "four control planes", nodes: []*corev1.Node{cp("m1").build(), cp("m2").build(), cp("m3").build(), cp("m4").build()}, candidate: cp("m4").build(), want: false, reason: "exactly 3"},
		{name: "label presence counts, not value", nodes: []*corev1.Node{cp("m1").build(), cp("m2").build()}, candidate: newNode("x").label(LabelRoleEtcd, "false").build(), want: true, reason: "3 control-plane nodes"},
		{name: "nil candidate", candidate: nil, want: false, reason: "no node given"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason := MaintenancePossible(tc.nodes, tc.candidate)
			assert.Equal(t, tc.want, ok, reason)
			assert.Contains(t, reason, tc.reason)
		})
	}
}

func TestRequestMaintenanceNil(t *testing.T) {
	assert.Nil(t, RequestMaintenance(nil))
}

// Maintenance is under way from the request on, and while Harvester reports
// any maintain-status.
func TestMaintenanceUnderWay(t *testing.T) {
	node := func(annotations map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}}
	}
	assert.False(t, MaintenanceUnderWay(nil))
	assert.False(t, MaintenanceUnderWay(node(nil)))
	assert.True(t, MaintenanceUnderWay(node(map[string]string{AnnotationDrainRequested: "true"})))
	assert.True(t, MaintenanceUnderWay(node(map[string]string{AnnotationMaintainStatus: string(MaintenanceCompleted)})))
}
