package ownedpools

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// A pool's server joins under its Inventory's name, so the Inventories'
// chain binds its node as any other: the hardware facts and the
// HardwareHealthy condition reach the Node. Scale-down frees the Inventory,
// which then stands for a server without a node again.
func TestPoolNodeIsNamedAfterItsInventoryAndBound(t *testing.T) {
	env := newEnv(t)
	s := addServer(t, env, "rack-h-1", mac(100), map[string]string{"rack": "h"})
	createPool(t, env, ownedPool("rack-h", 1, map[string]string{"rack": "h"}))
	inst := bootedInstance(t, env, "rack-h")
	assert.Equal(t, s.name, inst.NodeName(), "the server joins under its Inventory's name")

	node := env.JoinOwnedServer(&inst)
	require.Eventually(t, func() bool {
		return inventoryCondition(t, env, s.name, equinixv1.BMCNodeFound, metav1.ConditionTrue, equinixv1.ReasonNodeFound)
	}, wait, tick, "the Inventory never bound the pool's node: %+v", env.Inventory(s.name).Status.Conditions)
	require.Eventually(t, func() bool {
		n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, node, metav1.GetOptions{})
		if err != nil || n.Labels[equinixv1.LabelManufacturer] != "Supermicro" {
			return false
		}
		for _, c := range n.Status.Conditions {
			if c.Type == equinixv1.NodeHardwareHealthy {
				return true
			}
		}
		return false
	}, wait, tick, "the pool's node never got its hardware facts and HardwareHealthy: %+v", nodeOf(t, env, node))
	n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, inst.Name, n.Labels[equinixv1.LabelInstance], "the node keeps its Instance's label")
	assert.Empty(t, n.Spec.ProviderID, "no Equinix Metal providerID on a server people own")
	assert.NotContains(t, n.Labels, equinixv1.LabelDeviceID)

	scale(t, env, "rack-h", 0)
	require.Eventually(t, func() bool { return len(instancesOf(t, env, "rack-h")) == 0 }, wait, tick)
	require.Eventually(t, func() bool {
		return inventoryCondition(t, env, s.name, equinixv1.BMCNodeFound, metav1.ConditionFalse, equinixv1.ReasonServerWithoutNode)
	}, wait, tick, "the freed Inventory never went back to no node")
	assert.NotContains(t, env.Inventory(s.name).Labels, equinixv1.LabelClaimedBy)
}

// With fencing on, a pool's node that goes NotReady is fenced by the
// Inventories' chain: one power-off, then the out-of-service taint. The
// pool leaves the fenced server's power alone (no power cycle, which would
// switch it on under the fencer), and its replacement at the end of
// nodeCleanupWaitInterval releases it with nothing sent (it is off) and no
// fencing state left: the Node, and its taint, gone, the Inventory's
// Fenced condition lifted, the Inventory free.
func TestFencedPoolNodeIsNotCycledAndIsReleasedCleanly(t *testing.T) {
	env := fencingEnv(t)
	s := addServer(t, env, "rack-x-1", mac(110), map[string]string{"rack": "x"})
	p := ownedPool("rack-x", 1, map[string]string{"rack": "x"})
	// The first power cycle would be due 20 s into the NotReady spell, the
	// second 40 s in, the replacement 60 s in; the fence comes at 2 s.
	p.Spec.NodeCleanupWaitInterval = &metav1.Duration{Duration: time.Minute}
	createPool(t, env, p)
	inst := bootedInstance(t, env, "rack-x")
	node := joinBound(t, env, s, &inst)
	before := len(s.bmc.PowerTransitions())

	setReady(t, env, node, corev1.ConditionUnknown, time.Now())
	require.Eventually(t, func() bool {
		return inventoryCondition(t, env, s.name, equinixv1.BMCFenced, metav1.ConditionTrue, equinixv1.ReasonFenced) && outOfServiceTaint(t, env, node)
	}, wait, tick, "the pool's node was never fenced: %+v", env.Inventory(s.name).Status.Conditions)
	assert.Equal(t, "Off", s.bmc.PowerState())

	// The replacement must not take the server back: a server the
	// selector no longer chooses is released, not claimed again.
	require.Eventually(t, func() bool {
		inv := env.Inventory(s.name)
		delete(inv.Labels, "rack")
		_, err := env.Client.MetalV1alpha1().Inventories(ns).Update(env.Ctx, inv, metav1.UpdateOptions{})
		return err == nil
	}, wait, tick)
	require.Eventually(t, func() bool {
		for _, i := range instancesOf(t, env, "rack-x") {
			if i.Name == inst.Name {
				return false
			}
		}
		return true
	}, 3*wait, tick, "the pool never replaced the fenced server")
	require.Eventually(t, func() bool {
		return inventoryCondition(t, env, s.name, equinixv1.BMCFenced, metav1.ConditionFalse, equinixv1.ReasonFenceLifted) &&
			inventoryCondition(t, env, s.name, equinixv1.BMCNodeFound, metav1.ConditionFalse, equinixv1.ReasonServerWithoutNode)
	}, wait, tick, "the released server kept its fencing state: %+v", env.Inventory(s.name).Status.Conditions)
	inv := env.Inventory(s.name)
	assert.NotContains(t, inv.Labels, equinixv1.LabelClaimedBy)
	assert.NotContains(t, inv.Annotations, equinixv1.AnnotationClaimUID)
	_, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, node, metav1.GetOptions{})
	assert.Error(t, err, "the Node is deleted, and its taint with it")

	// One command since the node went NotReady: the fencer's power-off.
	// No power cycle of the pool, nothing at the release (already off).
	ts := s.bmc.PowerTransitions()[before:]
	require.Len(t, ts, 1, "only the fence's power-off: %+v", ts)
	assert.Equal(t, bmcsim.PowerChangeOff, ts[0].Change)
	got := instancesOf(t, env, "rack-x")
	for _, i := range got {
		assert.Zero(t, i.Status.PowerCycles)
	}
}

// bootedInstance waits for the pool's one Instance to claim its server and
// boot it, and returns it.
func bootedInstance(t *testing.T, env *framework.Env, pool string) equinixv1.Instance {
	t.Helper()
	var inst equinixv1.Instance
	require.Eventually(t, func() bool {
		insts := instancesOf(t, env, pool)
		if len(insts) != 1 || insts[0].Status.InstallRequestedAt == nil {
			return false
		}
		inst = insts[0]
		return true
	}, wait, tick, "the pool never claimed and booted its server")
	return inst
}

func inventoryCondition(t *testing.T, env *framework.Env, name, condType string, status metav1.ConditionStatus, reason string) bool {
	t.Helper()
	c := conditions.Get(env.Inventory(name).Status.Conditions, condType)
	return c != nil && c.Status == status && c.Reason == reason
}

// fencingEnv runs the hardware mode with fencing on (a 2 s grace period,
// one node fenced at most) on node own-29, beside a second Ready node: a
// pool's node NotReady among three keeps the fencer's quorum guard open.
func fencingEnv(t *testing.T) *framework.Env {
	t.Helper()
	opts := hardwareOpts()
	opts.Configure = func(c *config.Config) {
		configure(c)
		c.Fencing, c.FencingMaxFenced, c.FencingGracePeriod = true, 1, 2*time.Second
		c.NodeName = "own-29"
	}
	env := framework.New(t, &shared, opts)
	env.CreateReadyNode("own-29")
	env.CreateReadyNode("peer-29")
	return env
}

// joinBound registers the Node of the pool's server, Ready, and waits until
// its Instance is managed and its Inventory bound the node; it returns the
// node's name.
func joinBound(t *testing.T, env *framework.Env, s *server, inst *equinixv1.Instance) string {
	t.Helper()
	node := env.JoinOwnedServer(inst)
	require.Eventually(t, func() bool {
		got, err := env.Client.EquinixV1().Instances().Get(env.Ctx, inst.Name, metav1.GetOptions{})
		return err == nil && got.Status.Status == equinixv1.PhaseManaged &&
			inventoryCondition(t, env, s.name, equinixv1.BMCNodeFound, metav1.ConditionTrue, equinixv1.ReasonNodeFound)
	}, wait, tick, "the Instance never saw its node join, or its Inventory never bound it: %+v", env.Inventory(s.name).Status.Conditions)
	return node
}

func outOfServiceTaint(t *testing.T, env *framework.Env, name string) bool {
	t.Helper()
	n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	for _, taint := range n.Spec.Taints {
		if taint.Key == corev1.TaintNodeOutOfService {
			return true
		}
	}
	return false
}

func nodeOf(t *testing.T, env *framework.Env, name string) string {
	t.Helper()
	n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("labels %v, annotations %v, conditions %+v", n.Labels, n.Annotations, n.Status.Conditions)
}

// A pool's server whose node registered but has never been Ready is still
// installing or joining: however long that lasts past the grace period, it
// is not fenced (a power-off would only break its install). Once it has
// been Ready, it is fenced like any node.
func TestJoiningPoolNodeIsNotFenced(t *testing.T) {
	env := fencingEnv(t)
	s := addServer(t, env, "rack-j-1", mac(111), map[string]string{"rack": "j"})
	createPool(t, env, ownedPool("rack-j", 1, map[string]string{"rack": "j"}))
	inst := bootedInstance(t, env, "rack-j")
	before := len(s.bmc.PowerTransitions())

	// The installer's kubelet registers the node, NotReady for a minute.
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: inst.Status.Server, Labels: map[string]string{equinixv1.LabelInstance: inst.Name}}}
	_, err := env.Kube.CoreV1().Nodes().Create(env.Ctx, n, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Kube.CoreV1().Nodes().Delete(env.Ctx, n.Name, metav1.DeleteOptions{}) })
	setReady(t, env, n.Name, corev1.ConditionFalse, time.Now().Add(-time.Minute))
	require.Eventually(t, func() bool {
		return inventoryCondition(t, env, s.name, equinixv1.BMCFenced, metav1.ConditionFalse, equinixv1.ReasonFenceHeldJoining)
	}, wait, tick, "a joining pool node was not held back from fencing: %+v", env.Inventory(s.name).Status.Conditions)
	assert.False(t, outOfServiceTaint(t, env, n.Name))
	assert.Empty(t, s.bmc.PowerTransitions()[before:], "a joining server got a power command")
	assert.Equal(t, "On", s.bmc.PowerState())

	// Joined, then dead: fenced.
	setReady(t, env, n.Name, corev1.ConditionTrue, time.Now())
	require.Eventually(t, func() bool {
		got, err := env.Client.EquinixV1().Instances().Get(env.Ctx, inst.Name, metav1.GetOptions{})
		return err == nil && got.Status.JoinedAt != nil
	}, wait, tick)
	setReady(t, env, n.Name, corev1.ConditionUnknown, time.Now())
	require.Eventually(t, func() bool {
		return inventoryCondition(t, env, s.name, equinixv1.BMCFenced, metav1.ConditionTrue, equinixv1.ReasonFenced) && outOfServiceTaint(t, env, n.Name)
	}, wait, tick, "the joined pool node was never fenced: %+v", env.Inventory(s.name).Status.Conditions)
}
