package health

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// rolloutWatch samples a pool's Instances while it rolls out: the most
// servers it held at once (those being removed included: their devices
// still exist), the fewest available (managed, not being removed) and the
// most servers installing at once.
type rolloutWatch struct {
	maxServers, minAvailable, maxInstalling atomic.Int32
	// progress is set once the pool's status showed a rollout half done.
	progress atomic.Bool
	stop     chan struct{}
	done     chan struct{}
}

func watchRollout(env *framework.Env, pool string, count int32) *rolloutWatch {
	w := &rolloutWatch{stop: make(chan struct{}), done: make(chan struct{})}
	w.minAvailable.Store(count)
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			var servers, available, installing int32
			for _, i := range env.Instances(pool) {
				servers++
				switch {
				case i.DeletionTimestamp != nil:
				case i.Status.Status == equinixv1.PhaseManaged:
					available++
				default:
					installing++
				}
			}
			if servers > w.maxServers.Load() {
				w.maxServers.Store(servers)
			}
			if available < w.minAvailable.Load() {
				w.minAvailable.Store(available)
			}
			if installing > w.maxInstalling.Load() {
				w.maxInstalling.Store(installing)
			}
			p := env.Pool(pool)
			c := poolCondition(env, pool, equinixv1.PoolRollingOut)
			if p != nil && c != nil && c.Status == metav1.ConditionTrue && p.Status.Updated > 0 && p.Status.Updated < count &&
				strings.Contains(c.Message, "servers updated") {
				w.progress.Store(true)
			}
		}
	}()
	return w
}

func (w *rolloutWatch) finish() {
	close(w.stop)
	<-w.done
}

// changePlan edits the pool's plan, a change that needs new servers.
func changePlan(t *testing.T, env *framework.Env, pool, plan string) {
	t.Helper()
	env.EditPool(pool, func(cur *equinixv1.InstancePool) {
		cur.Spec.Plan = plan
	})
}

// waitRolledOut waits until the pool has count managed servers of plan and
// none of another.
func waitRolledOut(t *testing.T, env *framework.Env, pool, plan string, count int, timeout time.Duration) {
	t.Helper()
	ok := assert.Eventually(t, func() bool {
		insts := env.Instances(pool)
		if len(insts) != count {
			return false
		}
		for _, i := range insts {
			if i.Spec.Plan != plan || i.Status.Status != equinixv1.PhaseManaged || i.DeletionTimestamp != nil {
				return false
			}
		}
		return true
	}, timeout, 100*time.Millisecond, "the rollout did not finish")
	if !ok {
		env.Dump(pool)
		t.FailNow()
	}
}

func rolloutPool(t *testing.T, name string, count int32, surge, unavailable intstr.IntOrString) *equinixv1.InstancePool {
	p := layer3Pool(t, name, count)
	p.Spec.Rollout = equinixv1.RolloutStrategy{MaxSurge: &surge, MaxUnavailable: &unavailable}
	return p
}

// A large pool rolls faster than one by one: maxSurge 50% and
// maxUnavailable 25% of four servers add two and remove one at a time,
// never holding more than six servers nor fewer than three available, and
// the pool's status and columns follow the rollout.
func TestRolloutWithSurgeAndUnavailable(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	pool := env.CreatePool(rolloutPool(t, "roll-fast", 4, intstr.FromString("50%"), intstr.FromString("25%")))
	env.WaitPoolReady(pool.Name, 4, 2*time.Minute)

	w := watchRollout(env, pool.Name, 4)
	changePlan(t, env, pool.Name, "m3.small.x86")
	waitRolledOut(t, env, pool.Name, "m3.small.x86", 4, 3*time.Minute)
	w.finish()

	assert.LessOrEqual(t, w.maxServers.Load(), int32(6), "more servers than count + maxSurge (2)")
	assert.GreaterOrEqual(t, w.minAvailable.Load(), int32(3), "fewer available servers than count - maxUnavailable (1)")
	assert.GreaterOrEqual(t, w.maxInstalling.Load(), int32(2), "the rollout never installed two servers at once")
	assert.True(t, w.progress.Load(), "the pool's status never showed the rollout under way")
	done := env.WaitPoolReady(pool.Name, 4, time.Minute)
	assert.Equal(t, int32(4), done.Status.Updated)
	assert.Equal(t, int32(4), done.Status.Available)
	c := poolCondition(env, pool.Name, equinixv1.PoolRollingOut)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.True(t, env.EventRecorded(pool.Name, equinixv1.ReasonRollingOut))
}

// maxSurge 0 replaces in place: an old server goes before its successor
// is created, and the pool never holds more than count servers.
func TestRolloutInPlace(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	pool := env.CreatePool(rolloutPool(t, "roll-in-place", 2, intstr.FromInt32(0), intstr.FromInt32(1)))
	env.WaitPoolReady(pool.Name, 2, 2*time.Minute)

	w := watchRollout(env, pool.Name, 2)
	changePlan(t, env, pool.Name, "m3.small.x86")
	waitRolledOut(t, env, pool.Name, "m3.small.x86", 2, 3*time.Minute)
	w.finish()
	assert.LessOrEqual(t, w.maxServers.Load(), int32(2), "a server was created before an old one was gone")
	assert.GreaterOrEqual(t, w.minAvailable.Load(), int32(1), "both servers were unavailable at once")
	env.WaitPoolReady(pool.Name, 2, time.Minute)
}

// A rollout never removes a management node the etcd quorum needs: it
// waits, saying so, until Harvester has promoted a new server, and then
// goes on.
func TestRolloutKeepsQuorum(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	p := layer3Pool(t, "roll-managers", 3)
	p.Spec.NodeCleanupWaitInterval = nil
	pool := env.CreatePool(p)
	env.WaitPoolReady(pool.Name, 3, 2*time.Minute)
	promote := func(name string) error {
		_, err := env.Kube.CoreV1().Nodes().Patch(env.Ctx, name, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":"true","node-role.kubernetes.io/etcd":"true"}}}`), metav1.PatchOptions{})
		return err
	}
	for _, i := range env.Instances(pool.Name) {
		require.NoError(t, promote(i.Name))
	}

	changePlan(t, env, pool.Name, "m3.small.x86")
	env.Eventually(func() bool {
		c := poolCondition(env, pool.Name, equinixv1.PoolRollingOut)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == equinixv1.ReasonQuorumGuard
	}, 2*time.Minute, "the rollout did not report the quorum guard")
	assert.Contains(t, poolCondition(env, pool.Name, equinixv1.PoolRollingOut).Message, "management node")
	assert.Never(t, func() bool { return anyDeleting(env.Instances(pool.Name)) }, 3*time.Second, 100*time.Millisecond,
		"a management node the quorum needs was removed")

	// Harvester promotes each new server once it joined: the rollout ends.
	env.Eventually(func() bool {
		done := true
		for _, i := range env.Instances(pool.Name) {
			if i.Status.Status == equinixv1.PhaseManaged && i.DeletionTimestamp == nil {
				_ = promote(i.Name) // a node going away may refuse it
			}
			if i.Spec.Plan != "m3.small.x86" || i.Status.Status != equinixv1.PhaseManaged || i.DeletionTimestamp != nil {
				done = false
			}
		}
		return done && len(env.Instances(pool.Name)) == 3
	}, 3*time.Minute, "the rollout did not finish once new servers were promoted")
}

// While more servers are unhealthy than remediation.maxUnhealthy allows, a
// rollout removes none (it could be a partition), and says so.
func TestRolloutWaitsOutAPartition(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	p := layer3Pool(t, "roll-partition", 3)
	p.Spec.NodeCleanupWaitInterval = nil
	pool := env.CreatePool(p)
	env.WaitPoolReady(pool.Name, 3, 2*time.Minute)
	insts := env.Instances(pool.Name)
	for _, i := range insts[:2] {
		require.NoError(t, env.Agent.SetNodeNotReady(env.Ctx, i.Name, time.Now()))
	}
	changePlan(t, env, pool.Name, "m3.small.x86")
	env.Eventually(func() bool {
		c := poolCondition(env, pool.Name, equinixv1.PoolRollingOut)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == equinixv1.ReasonTooManyUnhealthy
	}, 2*time.Minute, "the rollout did not report the unhealthy servers")
	assert.Contains(t, poolCondition(env, pool.Name, equinixv1.PoolRollingOut).Message, "remediation.maxUnhealthy")
	assert.Never(t, func() bool { return anyDeleting(env.Instances(pool.Name)) }, 3*time.Second, 100*time.Millisecond,
		"the rollout removed a server during what may be a partition")
	for _, i := range insts[:2] {
		require.NoError(t, env.Agent.SetNodeReady(env.Ctx, i.Name))
	}
	waitRolledOut(t, env, pool.Name, "m3.small.x86", 3, 3*time.Minute)
}
