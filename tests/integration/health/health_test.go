package health

import (
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

var shared cluster.Shared

func TestMain(m *testing.M) {
	os.Exit(cluster.RunMain(m, cluster.Options{}, &shared))
}

// layer3Pool is the seed's pool on layer 3 (no VLANs), with a one-minute
// cleanup interval: tests backdate the Ready transition instead of waiting.
func layer3Pool(t *testing.T, name string, count int32) *equinixv1.InstancePool {
	p := framework.ParsePool(t, framework.SeedSample, name)
	p.Spec.Count = count
	p.Spec.NodeCleanupWaitInterval = &metav1.Duration{Duration: time.Minute}
	p.Spec.NetworkingConfiguration = equinixv1.NetworkingConfiguration{Type: equinixv1.NetworkTypeLayer3}
	return p
}

func poolCondition(env *framework.Env, pool, condType string) *metav1.Condition {
	p := env.Pool(pool)
	if p == nil {
		return nil
	}
	return conditions.Get(p.Status.Conditions, condType)
}

func names(insts []equinixv1.Instance) map[string]bool {
	out := map[string]bool{}
	for _, i := range insts {
		out[i.Name] = true
	}
	return out
}

// A node NotReady for longer than the interval is replaced, exactly once,
// even though its kubelet keeps heartbeating; one NotReady for less is not.
func TestUnhealthyNodeReplacedOnce(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	p := layer3Pool(t, "heal", 2)
	// Both servers go NotReady below; the partition guard (tested on its own)
	// must let two through here.
	p.Spec.Remediation.MaxUnhealthy = ptrIntOrString(2)
	pool := env.CreatePool(p)
	env.WaitPoolReady(pool.Name, 2, 2*time.Minute)
	insts := env.Instances(pool.Name)
	sick, fresh := insts[0], insts[1]

	// Fresh heartbeat, Ready=False for two minutes already.
	require.NoError(t, env.Agent.SetNodeNotReady(env.Ctx, sick.Name, time.Now().Add(-2*time.Minute)))
	// NotReady just now: not due for another minute.
	require.NoError(t, env.Agent.SetNodeNotReady(env.Ctx, fresh.Name, time.Now()))

	env.Eventually(func() bool { return !names(env.Instances(pool.Name))[sick.Name] }, time.Minute,
		"the server unhealthy for longer than nodeCleanupWaitInterval was not replaced")
	node, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, fresh.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, env.Agent.SetNodeReady(env.Ctx, fresh.Name))
	_ = node

	ready := env.WaitPoolReady(pool.Name, 2, 2*time.Minute)
	after := names(env.Instances(pool.Name))
	assert.True(t, after[fresh.Name], "the server unhealthy for less than the interval was replaced")
	assert.False(t, after[sick.Name])
	assert.Len(t, after, 2)
	var remediations int
	for _, ev := range env.Events(pool.Name) {
		if ev.Reason == "Remediating" {
			remediations += int(ev.Count)
		}
	}
	assert.Equal(t, 1, remediations, "exactly one replacement")
	assert.Equal(t, int32(2), ready.Status.Ready)
	env.AssertNoSecretLeaks()
}

// With half of a pool NotReady at once, nothing is deleted and the pool says why.
func TestPartitionBlocksRemediation(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	pool := env.CreatePool(layer3Pool(t, "partition", 4))
	env.WaitPoolReady(pool.Name, 4, 2*time.Minute)
	insts := env.Instances(pool.Name)
	// As in a real partition, both nodes are NotReady before either is due:
	// they went NotReady together, and become due 15s from now. (A node due
	// at once would rightly be replaced before the second one is seen.)
	since := time.Now().Add(15*time.Second - pool.Spec.NodeCleanupWaitInterval.Duration)
	for _, i := range insts[:2] {
		require.NoError(t, env.Agent.SetNodeNotReady(env.Ctx, i.Name, since))
	}
	env.Eventually(func() bool {
		c := poolCondition(env, pool.Name, equinixv1.PoolRemediationBlocked)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == equinixv1.ReasonTooManyUnhealthy
	}, time.Minute, "the pool did not report the partition guard")
	c := poolCondition(env, pool.Name, equinixv1.PoolRemediationBlocked)
	assert.Contains(t, c.Message, "2 of 4 servers are unhealthy")
	assert.Never(t, func() bool { return len(env.Instances(pool.Name)) != 4 || anyDeleting(env.Instances(pool.Name)) },
		3*time.Second, 100*time.Millisecond, "a server was deleted although half the pool is unhealthy")
	assert.Equal(t, equinixv1.PoolPhaseDegraded, env.Pool(pool.Name).Status.Status)
	for _, i := range insts[:2] {
		require.NoError(t, env.Agent.SetNodeReady(env.Ctx, i.Name))
	}
	env.WaitPoolReady(pool.Name, 4, time.Minute)
}

func anyDeleting(insts []equinixv1.Instance) bool {
	for _, i := range insts {
		if i.DeletionTimestamp != nil {
			return true
		}
	}
	return false
}

// A control-plane node whose removal would break the etcd quorum is never
// removed, and the pool says why.
func TestQuorumGuard(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	p := layer3Pool(t, "managers", 3)
	p.Spec.Remediation.MaxUnhealthy = ptrIntOrString(1)
	pool := env.CreatePool(p)
	env.WaitPoolReady(pool.Name, 3, 2*time.Minute)
	insts := env.Instances(pool.Name)
	// What Harvester's promotion does once the cluster has three nodes.
	for _, i := range insts {
		_, err := env.Kube.CoreV1().Nodes().Patch(env.Ctx, i.Name, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":"true","node-role.kubernetes.io/etcd":"true"}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, env.Agent.SetNodeNotReady(env.Ctx, insts[0].Name, time.Now().Add(-10*time.Minute)))
	env.Eventually(func() bool {
		c := poolCondition(env, pool.Name, equinixv1.PoolRemediationBlocked)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == equinixv1.ReasonQuorumGuard
	}, time.Minute, "the pool did not report the quorum guard")
	assert.Contains(t, poolCondition(env, pool.Name, equinixv1.PoolRemediationBlocked).Message, insts[0].Name)
	assert.Never(t, func() bool { return anyDeleting(env.Instances(pool.Name)) }, 3*time.Second, 100*time.Millisecond,
		"a management node the quorum needs was removed")

	// Scaling down never picks a manager the quorum needs either.
	require.NoError(t, env.Agent.SetNodeReady(env.Ctx, insts[0].Name))
	env.EditPool(pool.Name, func(cur *equinixv1.InstancePool) {
		cur.Spec.Count = 2
	})
	env.Eventually(func() bool {
		c := poolCondition(env, pool.Name, equinixv1.PoolScalingDown)
		return c != nil && c.Reason == equinixv1.ReasonQuorumGuard
	}, time.Minute, "scale-down did not report the quorum guard")
	assert.Len(t, env.Instances(pool.Name), 3)
}

// A pool spec change that needs new servers rolls out one server at a time,
// the new one first: the pool never has fewer than count managed servers.
func TestRolloutAddsBeforeRemoving(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	pool := env.CreatePool(layer3Pool(t, "rollout", 2))
	env.WaitPoolReady(pool.Name, 2, 2*time.Minute)
	old := names(env.Instances(pool.Name))

	var minManaged, maxActive atomic.Int32
	minManaged.Store(2)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			var managed, act int32
			for _, i := range env.Instances(pool.Name) {
				if i.DeletionTimestamp == nil {
					act++
				}
				if i.Status.Status == equinixv1.PhaseManaged && i.DeletionTimestamp == nil {
					managed++
				}
			}
			if managed < minManaged.Load() {
				minManaged.Store(managed)
			}
			if act > maxActive.Load() {
				maxActive.Store(act)
			}
		}
	}()
	env.EditPool(pool.Name, func(cur *equinixv1.InstancePool) {
		cur.Spec.Plan = "m3.small.x86"
	})
	env.Eventually(func() bool {
		insts := env.Instances(pool.Name)
		if len(insts) != 2 {
			return false
		}
		for _, i := range insts {
			if old[i.Name] || i.Spec.Plan != "m3.small.x86" || i.Status.Status != equinixv1.PhaseManaged {
				return false
			}
		}
		return true
	}, 3*time.Minute, "the rollout did not finish")
	close(stop)
	<-done
	assert.GreaterOrEqual(t, minManaged.Load(), int32(2), "the pool dropped below count managed servers during the rollout")
	assert.LessOrEqual(t, maxActive.Load(), int32(3), "more than one extra server at a time")
	// The rollout ends once the last old device is gone, and the pool
	// says so at its next pass.
	env.Eventually(func() bool {
		c := poolCondition(env, pool.Name, equinixv1.PoolRollingOut)
		return c != nil && c.Status == metav1.ConditionFalse
	}, 30*time.Second, "RollingOut stayed True after the rollout")
}

// Before a joined server is deleted its node goes into Harvester maintenance
// mode, and the device is deleted only once maintenance completed.
func TestMaintenanceBeforeRemoval(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	pool := env.CreatePool(layer3Pool(t, "drain", 1))
	env.WaitPoolReady(pool.Name, 1, time.Minute)
	inst := env.Instances(pool.Name)[0]
	env.Sim.ResetRequests()
	env.DeletePoolAndWait(pool.Name)
	completed, ok := env.Agent.MaintenanceCompletedAt(inst.Name)
	require.True(t, ok, "maintenance was never requested for node %s", inst.Name)
	var deleteAt time.Time
	for _, r := range env.Sim.RequestsFor("deleteDevice") {
		if r.Status == 204 {
			deleteAt = r.Time
		}
	}
	require.False(t, deleteAt.IsZero(), "the device was not deleted")
	assert.True(t, completed.Before(deleteAt), "the device was deleted before maintenance completed")
	assert.True(t, env.EventRecorded(inst.Name, "Maintenance"))
}

// A maintenance request withdrawn while the server waits to be removed (a
// person's Disable Maintenance Mode, racing the removal) is asked for again,
// not taken for Harvester's refusal: the server goes once maintenance
// completes, not at the timeout.
func TestWithdrawnMaintenanceIsAskedAgain(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{NoMaintenanceEmulator: true})
	pool := env.CreatePool(layer3Pool(t, "drain-withdrawn", 1))
	env.WaitPoolReady(pool.Name, 1, time.Minute)
	inst := env.Instances(pool.Name)[0]
	requested := func() bool {
		n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, inst.Name, metav1.GetOptions{})
		return err == nil && harvester.MaintenanceRequested(n)
	}
	annotate := func(patch string) {
		_, err := env.Kube.CoreV1().Nodes().Patch(env.Ctx, inst.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, env.Client.EquinixV1().InstancePools().Delete(env.Ctx, pool.Name, metav1.DeleteOptions{}))
	env.Eventually(requested, 30*time.Second, "maintenance was not requested")

	// Disable Maintenance Mode, as the UI writes it.
	annotate(`{"spec":{"unschedulable":false},"metadata":{"annotations":{"harvesterhci.io/drain-requested":null,"harvesterhci.io/maintain-status":null}}}`)
	env.Eventually(requested, 30*time.Second, "maintenance was not requested again")
	i, err := env.Client.EquinixV1().Instances().Get(env.Ctx, inst.Name, metav1.GetOptions{})
	require.NoError(t, err)
	c := framework.Condition(i, equinixv1.InstanceDeleting)
	require.NotNil(t, c)
	assert.Equal(t, equinixv1.ReasonMaintenance, c.Reason, c.Message)
	assert.False(t, env.EventRecorded(inst.Name, equinixv1.ReasonMaintenanceRefused), "a withdrawn request is not Harvester's refusal")

	// Harvester runs and completes it: the request goes, the status says so.
	annotate(`{"spec":{"unschedulable":true},"metadata":{"annotations":{"harvesterhci.io/drain-requested":null,"harvesterhci.io/maintain-status":"running"}}}`)
	annotate(`{"metadata":{"annotations":{"harvesterhci.io/maintain-status":"completed"}}}`)
	env.Eventually(func() bool { return len(env.Sim.Devices(framework.ProjectID)) == 0 }, time.Minute, "the server was not removed once maintenance completed")
	assert.False(t, env.EventRecorded(inst.Name, equinixv1.ReasonMaintenanceTimeout))
}

// Without a Harvester to complete it, maintenance waits the pool's timeout and
// then the server is removed anyway.
func TestMaintenanceTimeout(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{NoMaintenanceEmulator: true})
	p := layer3Pool(t, "drain-timeout", 1)
	p.Spec.Remediation.MaintenanceTimeout = &metav1.Duration{Duration: 2 * time.Second}
	pool := env.CreatePool(p)
	env.WaitPoolReady(pool.Name, 1, time.Minute)
	inst := env.Instances(pool.Name)[0]
	env.DeletePoolAndWait(pool.Name)
	assert.True(t, env.EventRecorded(inst.Name, "MaintenanceTimeout"))
	assert.Empty(t, env.Sim.Devices(framework.ProjectID))
}

// A device deleted outside the addon is noticed by the sweep and its server
// replaced, back to count managed servers.
func TestOutOfBandDeletionIsReplaced(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{Configure: func(c *configT) {
		c.OrphanSweepInterval = 300 * time.Millisecond
	}})
	pool := env.CreatePool(layer3Pool(t, "drift", 1))
	env.WaitPoolReady(pool.Name, 1, time.Minute)
	before := env.Instances(pool.Name)[0]
	require.NoError(t, env.Sim.DeleteDeviceOutOfBand(before.Status.InstanceID))
	env.Eventually(func() bool {
		insts := env.Instances(pool.Name)
		return len(insts) == 1 && insts[0].Name != before.Name && insts[0].Status.Status == equinixv1.PhaseManaged
	}, 2*time.Minute, "the server whose device vanished was not replaced")
	env.WaitPoolReady(pool.Name, 1, time.Minute)
	assert.True(t, env.EventRecorded(pool.Name, "Replacing"))
}

var _ = corev1.NodeReady
