package ownedpools

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// Harvester's power action on a pool's node in maintenance mode (written
// on its Inventory, as the UI does) switches its server off with one
// command, and the pool leaves the node alone: not unhealthy, no power
// cycle, no replacement, though it is NotReady past the pool's
// nodeCleanupWaitInterval.
func TestPowerActionOnAPoolNodeInMaintenance(t *testing.T) {
	env := newEnv(t)
	s := addServer(t, env, "rack-m-1", mac(130), map[string]string{"rack": "m"})
	p := ownedPool("rack-m", 1, map[string]string{"rack": "m"})
	p.Spec.NodeCleanupWaitInterval = &metav1.Duration{Duration: time.Minute}
	createPool(t, env, p)
	inst := bootedInstance(t, env, "rack-m")
	node := joinBound(t, env, s, &inst)
	before := len(s.bmc.PowerTransitions())

	require.Eventually(t, func() bool {
		n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, node, metav1.GetOptions{})
		if err != nil {
			return false
		}
		n.Annotations = map[string]string{harvester.AnnotationMaintainStatus: string(harvester.MaintenanceCompleted)}
		_, err = env.Kube.CoreV1().Nodes().Update(env.Ctx, n, metav1.UpdateOptions{})
		return err == nil
	}, wait, tick)
	require.Eventually(t, func() bool {
		inv := env.Inventory(s.name)
		inv.Spec.PowerActionRequested = seederv1alpha1.PowerOperationShutdown
		_, err := env.Client.MetalV1alpha1().Inventories(ns).Update(env.Ctx, inv, metav1.UpdateOptions{})
		return err == nil
	}, wait, tick)
	require.Eventually(t, func() bool {
		return env.Inventory(s.name).Status.PowerAction.LastActionStatus == seederv1alpha1.ActionStatusComplete
	}, wait, tick, "the power action never completed: %+v", env.Inventory(s.name).Status)
	assert.Equal(t, "Off", s.bmc.PowerState())

	// NotReady for two minutes already: an unhealthy server would be
	// cycled and replaced at once.
	setReady(t, env, node, corev1.ConditionUnknown, time.Now().Add(-2*time.Minute))
	require.Eventually(t, func() bool {
		got, err := env.Client.EquinixV1().Instances().Get(env.Ctx, inst.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		c := conditions.Get(got.Status.Conditions, equinixv1.InstanceReady)
		return got.Status.Status == equinixv1.PhaseOff && c != nil && c.Reason == equinixv1.ReasonNodeInMaintenance
	}, wait, tick, "the Instance never said its node is in maintenance")
	assert.Never(t, func() bool {
		got, err := env.Client.EquinixV1().Instances().Get(env.Ctx, inst.Name, metav1.GetOptions{})
		return err != nil || got.DeletionTimestamp != nil || got.Status.PowerCycles > 0 || got.Status.Status == equinixv1.PhaseUnhealthy
	}, 5*time.Second, tick, "the pool cycled or replaced a node in maintenance")
	ts := s.bmc.PowerTransitions()[before:]
	require.Len(t, ts, 1, "one command, the power action's: %+v", ts)
	assert.Equal(t, bmcsim.PowerChangeOff, ts[0].Change)
}
