package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/instancepool"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// The ledger flags a second device for one Instance, two at once, and a
// device of this cluster without an Instance tag; other clusters' devices
// and one device per Instance pass.
func TestLedgerViolations(t *testing.T) {
	ours := equinixv1.ClusterTag("ours")
	created := func(id, uid string, tags ...string) metalsim.Notification {
		if uid != "" {
			tags = append(tags, equinixv1.InstanceTag(uid))
		}
		return metalsim.Notification{Type: metalsim.DeviceCreated, DeviceID: id, Tags: tags}
	}
	deleted := func(id string, tags ...string) metalsim.Notification {
		return metalsim.Notification{Type: metalsim.DeviceDeleted, DeviceID: id, Tags: tags}
	}
	cases := []struct {
		name  string
		notes []metalsim.Notification
		want  int
	}{
		{"one device per instance", []metalsim.Notification{created("d1", "u1", ours), created("d2", "u2", ours), deleted("d1", ours)}, 0},
		{"another cluster's devices are not ours", []metalsim.Notification{created("d1", "u1", equinixv1.ClusterTag("other")), created("d2", "u1", equinixv1.ClusterTag("other"))}, 0},
		{"a replacement device for the same instance", []metalsim.Notification{created("d1", "u1", ours), deleted("d1", ours), created("d2", "u1", ours)}, 1},
		{"two devices at once", []metalsim.Notification{created("d1", "u1", ours), created("d2", "u1", ours)}, 2},
		{"no instance tag", []metalsim.Notification{created("d1", "", ours)}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newLedger(ours, nil)
			for _, n := range tc.notes {
				l.observe(n)
			}
			assert.Len(t, l.violations(), tc.want, "%v", l.violations())
		})
	}
}

func TestSettled(t *testing.T) {
	pool := func(count int32, status string, conds ...metav1.Condition) *equinixv1.InstancePool {
		p := &equinixv1.InstancePool{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 2}}
		p.Spec.Count = count
		p.Status = equinixv1.InstancePoolStatus{Status: status, Ready: count, ObservedGeneration: 2, Conditions: conds}
		return p
	}
	inst := func(deleting bool) equinixv1.Instance {
		i := equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: "p-abc"}, Spec: equinixv1.InstanceSpec{PoolName: "p"}}
		if deleting {
			i.DeletionTimestamp = &metav1.Time{}
		}
		return i
	}
	stale := pool(1, equinixv1.PoolPhaseReady)
	stale.Status.ObservedGeneration = 1
	cases := []struct {
		name  string
		pool  *equinixv1.InstancePool
		insts []equinixv1.Instance
		want  bool
	}{
		{"ready at count", pool(1, equinixv1.PoolPhaseReady), []equinixv1.Instance{inst(false)}, true},
		{"ready at zero", pool(0, equinixv1.PoolPhaseReady), nil, true},
		{"an older generation", stale, []equinixv1.Instance{inst(false)}, false},
		{"an instance still deleting", pool(1, equinixv1.PoolPhaseReady), []equinixv1.Instance{inst(false), inst(true)}, false},
		{"scaling", pool(1, equinixv1.PoolPhaseScaling), nil, false},
		{"stopped by a guard", pool(2, equinixv1.PoolPhaseFailed, metav1.Condition{Type: equinixv1.PoolProvisioningFailed, Status: metav1.ConditionTrue}), nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, settled(tc.pool, tc.insts))
		})
	}
}

// A device of a project-B pool made elsewhere, or a device in a project no
// Secret of the run names, is flagged.
func TestLedgerProjects(t *testing.T) {
	ours := equinixv1.ClusterTag("ours")
	created := func(id, pool, project string) metalsim.Notification {
		return metalsim.Notification{Type: metalsim.DeviceCreated, DeviceID: id, ProjectID: project,
			Tags: []string{ours, equinixv1.PoolTag(pool), equinixv1.InstanceTag("u-" + id)}}
	}
	l := newLedger(ours, map[string]bool{"pb": true})
	for _, n := range []metalsim.Notification{
		created("d1", "pa", framework.ProjectID), created("d2", "pa", projectB), created("d3", "pb", projectB),
		created("d4", "pb", framework.ProjectID), created("d5", "pa", "cccccccc-0000-4000-8000-00000000000c"),
	} {
		l.observe(n)
	}
	v := l.violations()
	assert.Len(t, v, 2, "%v", v)
	p, ok := l.projectOf("d3")
	assert.True(t, ok)
	assert.Equal(t, projectB, p)
}

// The watch flags a rollout above count + maxSurge once it was within it,
// and one below count - maxUnavailable only while nothing failed.
func TestRolloutWatchBounds(t *testing.T) {
	pool := &equinixv1.InstancePool{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 3}}
	pool.Spec.Count = 2
	pool.Spec.Rollout = rolloutStrategy(poolSpec{Surge: "1", Unavailable: "0"})
	pool.Status.ObservedGeneration = 3
	hash := instancepool.TemplateHash(&pool.Spec.InstanceTemplate)
	server := func(name, template, status string, removing bool) *equinixv1.Instance {
		i := &equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{equinixv1.AnnotationTemplateHash: template}}}
		i.Status.Status = status
		if removing {
			i.DeletionTimestamp = &metav1.Time{}
		}
		return i
	}
	w := &rolloutWatch{windows: map[types.UID]*rolloutWindow{}}
	win := &rolloutWindow{generation: 3}
	managed := equinixv1.PhaseManaged
	w.checkPool(pool, []*equinixv1.Instance{server("a", "old", managed, false), server("b", "old", managed, false), server("n", hash, equinixv1.PhaseInstalling, false)}, win, true)
	assert.Empty(t, w.found)
	w.checkPool(pool, []*equinixv1.Instance{server("a", "old", managed, true), server("b", "old", managed, false),
		server("n", hash, equinixv1.PhaseInstalling, false), server("m", hash, equinixv1.PhaseInstalling, false)}, win, true)
	require.Len(t, w.found, 2, "four servers (one being removed) with count 2 and maxSurge 1; one available with maxUnavailable 0: %v", w.found)
	assert.Contains(t, w.found[0], "more than count 2 + maxSurge 1")
	assert.Contains(t, w.found[1], "fewer than count 2 - maxUnavailable 0")

	w, win = &rolloutWatch{windows: map[types.UID]*rolloutWindow{}}, &rolloutWindow{generation: 3}
	w.checkPool(pool, []*equinixv1.Instance{server("a", "old", managed, false), server("b", "old", managed, false)}, win, true)
	w.checkPool(pool, []*equinixv1.Instance{server("a", "old", equinixv1.PhaseUnhealthy, false), server("b", "old", managed, false)}, win, false)
	assert.Empty(t, w.found, "a server that failed is not the rollout's doing")

	// A layer-2 server is available once its ports were converted after
	// the join: the conversion cuts its node's network for a moment, and
	// maxUnavailable does not count it before.
	layer2 := func(name, template, status string, converted bool) *equinixv1.Instance {
		i := server(name, template, status, false)
		i.Spec.NetworkingConfiguration.Type = equinixv1.NetworkTypeLayer2Individual
		i.Status.NetworkType = equinixv1.NetworkTypeHybridBonded
		if converted {
			i.Status.NetworkType = equinixv1.NetworkTypeLayer2Individual
			i.Status.Conditions = []metav1.Condition{{Type: equinixv1.InstanceNetworkConfigured, Status: metav1.ConditionTrue}}
		}
		return i
	}
	w, win = &rolloutWatch{windows: map[types.UID]*rolloutWindow{}}, &rolloutWindow{generation: 3}
	w.checkPool(pool, []*equinixv1.Instance{layer2("a", "old", managed, false), layer2("b", "old", managed, true), server("n", hash, equinixv1.PhaseInstalling, false)}, win, true)
	w.checkPool(pool, []*equinixv1.Instance{layer2("a", "old", equinixv1.PhaseUnhealthy, false), layer2("b", "old", managed, true), server("n", hash, equinixv1.PhaseJoining, false)}, win, true)
	assert.Empty(t, w.found, "a layer-2 server still to convert was never available")
	w.checkPool(pool, []*equinixv1.Instance{layer2("a", "old", managed, true), layer2("b", "old", managed, true), server("n", hash, equinixv1.PhaseJoining, false)}, win, true)
	w.checkPool(pool, []*equinixv1.Instance{layer2("a", "old", managed, false), layer2("b", "old", managed, true), server("n", hash, equinixv1.PhaseJoining, false)}, win, true)
	require.Len(t, w.found, 1, "a converted server that drops out counts: %v", w.found)
}

// The power invariants: a joined node's server switched only around its
// maintenance mode, and no more actions carried out than requested.
func TestPowerLedgerViolations(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newPowerLedger()
	l.created["n1"] = t0
	l.allowed["n1"] = []span{{from: t0.Add(10 * time.Second), to: t0.Add(20 * time.Second)}}
	l.requested["u1"] = map[string]int{"off": 1, "reboot": 1}
	l.applied["u1"] = map[string]int{"off": 1, "on": 1}
	l.actions = []appliedAction{
		{at: t0.Add(15 * time.Second), node: "n1", uid: "u1", kind: "off"},
		{at: t0.Add(25 * time.Second), node: "n1", uid: "u1", kind: "on"},         // within the slack after it ended
		{at: t0.Add(time.Second), node: "n1", uid: "u1", kind: "on"},              // joined only just: not judged
		{at: t0.Add(5 * time.Minute), node: "n1", uid: "u1", kind: "reboot"},      // long after: a violation
		{at: t0.Add(5 * time.Minute), node: "unknown", uid: "u2", kind: "reboot"}, // no node: not joined
	}
	v := l.violations()
	require.Len(t, v, 1, "%v", v)
	assert.Contains(t, v[0], "power reboot")

	l.applied["u1"]["off"] = 2
	assert.Len(t, l.violations(), 2, "a second power-off for one request")
}

// The maintenance spans follow the newest copy of a node, whichever way it
// came: the answer to the campaign's own write opens a span at once, and the
// watch delivering that copy (or an older one) late changes nothing.
func TestPowerLedgerTakesTheNewestCopyOfANode(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	node := func(rv string, maintained bool) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: rv, Annotations: map[string]string{}}}
		if maintained {
			n.Annotations[harvester.AnnotationMaintainStatus] = string(harvester.MaintenanceCompleted)
		}
		return n
	}
	l := newPowerLedger()
	l.saw(node("10", false), t0)
	l.saw(node("12", true), t0.Add(20*time.Second))  // the answer to the write
	l.saw(node("11", false), t0.Add(25*time.Second)) // an older copy, late
	l.saw(node("12", true), t0.Add(30*time.Second))  // the watch, late
	require.Equal(t, []span{{from: t0.Add(20 * time.Second)}}, l.allowed["n1"])

	l.actions = []appliedAction{{at: t0.Add(21 * time.Second), node: "n1", uid: "u1", kind: "off"}}
	l.requested["u1"] = map[string]int{"off": 1}
	l.applied["u1"] = map[string]int{"off": 1}
	assert.Empty(t, l.violations(), "the power off came a second after the node was in maintenance mode")

	l.saw(node("13", false), t0.Add(40*time.Second))
	assert.Equal(t, []span{{from: t0.Add(20 * time.Second), to: t0.Add(40 * time.Second)}}, l.allowed["n1"])
}
