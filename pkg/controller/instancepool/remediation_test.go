package instancepool

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func poolWith(count int32, interval time.Duration) *equinixv1.InstancePool {
	p := &equinixv1.InstancePool{Spec: equinixv1.InstancePoolSpec{Count: count}}
	if interval > 0 {
		p.Spec.NodeCleanupWaitInterval = &metav1.Duration{Duration: interval}
	}
	mu := intstr.FromString("40%")
	p.Spec.Remediation = equinixv1.RemediationPolicy{MaxUnhealthy: &mu, MaxInFlight: 1}
	return p
}

func (b *instBuilder) sickSince(d time.Duration) *instBuilder {
	b.Status.Status = equinixv1.PhaseUnhealthy
	t := metav1.NewTime(now.Add(-d))
	b.Status.UnhealthySince = &t
	b.Status.NodeName = b.Name
	return b
}
func (b *instBuilder) deleting() *instBuilder {
	t := metav1.NewTime(now)
	b.DeletionTimestamp = &t
	return b
}
func (b *instBuilder) skip() *instBuilder {
	b.Annotations = map[string]string{equinixv1.AnnotationSkipRemediation: "true"}
	return b
}

func mgmtNode(name string, ready bool) *corev1.Node {
	st := corev1.ConditionTrue
	if !ready {
		st = corev1.ConditionFalse
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/control-plane": "true"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}}}
}

func TestPlanRemediation(t *testing.T) {
	cases := []struct {
		name        string
		pool        *equinixv1.InstancePool
		insts       []*equinixv1.Instance
		nodes       []*corev1.Node
		replace     []string
		blocked     string
		nextCheckOK func(time.Duration) bool
	}{
		{name: "off without nodeCleanupWaitInterval", pool: poolWith(1, 0),
			insts: []*equinixv1.Instance{inst("a", time.Hour).sickSince(time.Hour).build()}},
		{name: "a lone server unhealthy long enough is replaced", pool: poolWith(1, 5*time.Minute),
			insts: []*equinixv1.Instance{inst("a", time.Hour).sickSince(6 * time.Minute).build()}, replace: []string{"a"}},
		{name: "not yet: the next check is when it becomes due", pool: poolWith(1, 5*time.Minute),
			insts:       []*equinixv1.Instance{inst("a", time.Hour).sickSince(2 * time.Minute).build()},
			nextCheckOK: func(d time.Duration) bool { return d == 3*time.Minute }},
		{name: "half the pool unhealthy: a partition, not failures", pool: poolWith(4, 5*time.Minute),
			insts: []*equinixv1.Instance{inst("a", time.Hour).sickSince(time.Hour).build(), inst("b", time.Hour).sickSince(time.Hour).build(),
				inst("c", time.Hour).build(), inst("d", time.Hour).build()},
			blocked: equinixv1.ReasonTooManyUnhealthy},
		{name: "one at a time", pool: poolWith(4, 5*time.Minute),
			insts: []*equinixv1.Instance{inst("a", time.Hour).sickSince(time.Hour).build(), inst("b", time.Hour).deleting().build(),
				inst("c", time.Hour).build(), inst("d", time.Hour).build()},
			blocked: equinixv1.ReasonReplacementInFlight},
		{name: "the oldest unhealthy goes first", pool: func() *equinixv1.InstancePool { p := poolWith(10, 5*time.Minute); return p }(),
			insts: []*equinixv1.Instance{inst("young", time.Hour).sickSince(10 * time.Minute).build(), inst("old", time.Hour).sickSince(50 * time.Minute).build(),
				inst("c", time.Hour).build(), inst("d", time.Hour).build(), inst("e", time.Hour).build()},
			replace: []string{"old"}, blocked: equinixv1.ReasonReplacementInFlight},
		{name: "skip annotation", pool: poolWith(3, 5*time.Minute),
			insts:   []*equinixv1.Instance{inst("a", time.Hour).sickSince(time.Hour).skip().build(), inst("b", time.Hour).build(), inst("c", time.Hour).build()},
			blocked: equinixv1.ReasonSkipAnnotation},
		{name: "a management node the quorum needs stays", pool: poolWith(3, 5*time.Minute),
			insts:   []*equinixv1.Instance{inst("m1", time.Hour).sickSince(time.Hour).build(), inst("m2", time.Hour).build(), inst("m3", time.Hour).build()},
			nodes:   []*corev1.Node{mgmtNode("m1", false), mgmtNode("m2", true), mgmtNode("m3", true)},
			blocked: equinixv1.ReasonQuorumGuard},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := planRemediation(tc.pool, tc.insts, tc.nodes, now)
			assert.Equal(t, tc.replace, nilIfEmpty(names(plan.Replace)))
			assert.Equal(t, tc.blocked, plan.BlockedReason, plan.BlockedMessage)
			if tc.nextCheckOK != nil {
				assert.True(t, tc.nextCheckOK(plan.NextCheck), "next check %s", plan.NextCheck)
			}
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestMaxUnhealthy(t *testing.T) {
	for _, tc := range []struct {
		count int32
		value intstr.IntOrString
		want  int
	}{
		{1, intstr.FromString("40%"), 1}, {2, intstr.FromString("40%"), 1}, {4, intstr.FromString("40%"), 1},
		{10, intstr.FromString("40%"), 4}, {10, intstr.FromInt32(2), 2}, {5, intstr.FromInt32(0), 1},
	} {
		p := poolWith(tc.count, time.Minute)
		p.Spec.Remediation.MaxUnhealthy = &tc.value
		assert.Equal(t, tc.want, maxUnhealthy(p), "count %d, %s", tc.count, tc.value.String())
	}
}

func TestBackoffAndTimeout(t *testing.T) {
	assert.Equal(t, time.Duration(0), replacementBackoff(30*time.Second, 0))
	assert.Equal(t, 30*time.Second, replacementBackoff(30*time.Second, 1))
	assert.Equal(t, 2*time.Minute, replacementBackoff(30*time.Second, 3))
	assert.Equal(t, 10*time.Minute, replacementBackoff(30*time.Second, 20))

	young := inst("y", 10*time.Minute).neverJoined().build()
	young.CreationTimestamp = metav1.NewTime(now.Add(-10 * time.Minute))
	out, left := timedOut(young, 45*time.Minute, now)
	assert.False(t, out)
	assert.Equal(t, 35*time.Minute, left)
	out, _ = timedOut(young, 5*time.Minute, now)
	assert.True(t, out)
	joined := inst("j", time.Hour).build()
	out, _ = timedOut(joined, time.Minute, now)
	assert.False(t, out, "joined servers never time out")
}

// A server of one's own starts its install at its network boot: the wait
// for a free server or for the join information before it never times
// out, and the startup time counts from the boot.
func TestOwnedServerStartupCountsFromItsNetworkBoot(t *testing.T) {
	waiting := inst("w", 0).neverJoined().build()
	waiting.Spec.Servers = &equinixv1.OwnedServers{}
	waiting.CreationTimestamp = metav1.NewTime(now.Add(-3 * time.Hour))
	out, left := timedOut(waiting, 45*time.Minute, now)
	assert.False(t, out, "no server booted yet")
	assert.Zero(t, left, "nothing to wait for")

	booted := waiting.DeepCopy()
	at := metav1.NewTime(now.Add(-10 * time.Minute))
	booted.Status.NetworkBootRequestedAt = &at
	out, left = timedOut(booted, 45*time.Minute, now)
	assert.False(t, out)
	assert.Equal(t, 35*time.Minute, left)
	out, _ = timedOut(booted, 5*time.Minute, now)
	assert.True(t, out)
}
