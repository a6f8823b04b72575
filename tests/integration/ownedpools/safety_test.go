package ownedpools

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// A controller that stopped between the claim and the Instance's status
// write finds its claim again by label and UID after the restart: the
// claimed server is the Instance's, and no second one is claimed.
func TestRestartBetweenClaimAndStatusAdoptsTheClaim(t *testing.T) {
	env := newEnv(t)
	createPool(t, env, ownedPool("rack-r", 1, map[string]string{"rack": "r"}))
	var inst equinixv1.Instance
	require.Eventually(t, func() bool {
		insts := instancesOf(t, env, "rack-r")
		if len(insts) != 1 {
			return false
		}
		inst = insts[0]
		c := conditions.Get(inst.Status.Conditions, equinixv1.InstanceServerClaimed)
		return c != nil && c.Reason == equinixv1.ReasonNoFreeServer
	}, wait, tick, "the Instance never waited for a server")
	env.StopController()

	// What the stopped controller's claim left: the Inventory's label and
	// UID, and nothing in the Instance's status. A second server is free.
	first := addServerStopped(t, env, "rack-r-2", mac(51), map[string]string{"rack": "r"})
	second := addServerStopped(t, env, "rack-r-1", mac(50), map[string]string{"rack": "r"})
	inv := env.Inventory(first.name)
	inv.Labels[equinixv1.LabelClaimedBy] = inst.Name
	inv.Annotations = map[string]string{equinixv1.AnnotationClaimUID: string(inst.UID)}
	_, err := env.Client.MetalV1alpha1().Inventories(ns).Update(env.Ctx, inv, metav1.UpdateOptions{})
	require.NoError(t, err)

	env.StartController(env.Config(hardwareOpts()))
	require.Eventually(t, func() bool {
		got, err := env.Client.EquinixV1().Instances().Get(env.Ctx, inst.Name, metav1.GetOptions{})
		return err == nil && got.Status.Server == first.name && got.Status.InstallRequestedAt != nil
	}, wait, tick, "the Instance never adopted its claim")
	assert.Equal(t, map[string][]string{inst.Name: {first.name}}, claims(t, env))
	boots, _ := second.networkBoots()
	assert.Zero(t, boots, "the free server was not booted")
	assert.Len(t, second.bmc.PowerTransitions(), 1, "only the test switched it off")
}

// A server on which a node of the cluster runs (a Node of the Inventory's
// name) is never claimed, booted or powered, whatever the selector says.
func TestServerWithANodeIsNeverTouched(t *testing.T) {
	env := newEnv(t)
	n, err := env.Kube.CoreV1().Nodes().Create(env.Ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "rack-n-1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Kube.CoreV1().Nodes().Delete(env.Ctx, n.Name, metav1.DeleteOptions{}) })
	joined := addServer(t, env, "rack-n-1", mac(60), map[string]string{"rack": "n"})
	createPool(t, env, ownedPool("rack-n", 1, map[string]string{"rack": "n"}))
	require.Eventually(t, func() bool {
		p, err := env.Client.EquinixV1().InstancePools().Get(env.Ctx, "rack-n", metav1.GetOptions{})
		if err != nil {
			return false
		}
		c := conditions.Get(p.Status.Conditions, equinixv1.PoolServersAvailable)
		return c != nil && c.Reason == equinixv1.ReasonNoFreeServer
	}, wait, tick, "the pool never said it lacks a server")
	assert.Empty(t, claims(t, env))
	assert.Len(t, joined.bmc.PowerTransitions(), 1, "only the test switched it off")
	assert.NotEqual(t, bmcsim.BootPxe, joined.bmc.BootOverride().Target)
}

// A power request written on the Inventory of a claimed server (what
// Harvester's node action or a person's edit does) is refused: the pool
// switches that server's power, and nothing reaches its BMC.
func TestPowerRequestOnAClaimedServerIsRefused(t *testing.T) {
	env := newEnv(t)
	s := addServer(t, env, "rack-p-1", mac(70), map[string]string{"rack": "p"})
	createPool(t, env, ownedPool("rack-p", 1, map[string]string{"rack": "p"}))
	require.Eventually(t, func() bool {
		insts := instancesOf(t, env, "rack-p")
		return len(insts) == 1 && insts[0].Status.InstallRequestedAt != nil
	}, wait, tick, "the pool never booted its server")
	before := len(s.bmc.PowerTransitions())

	require.Eventually(t, func() bool {
		inv := env.Inventory(s.name)
		inv.Spec.PowerActionRequested = seederv1alpha1.PowerOperationShutdown
		_, err := env.Client.MetalV1alpha1().Inventories(ns).Update(env.Ctx, inv, metav1.UpdateOptions{})
		return err == nil
	}, wait, tick)
	require.Eventually(t, func() bool {
		return env.Inventory(s.name).Status.PowerAction.LastActionStatus == seederv1alpha1.ActionStatusFailed
	}, wait, tick, "the request never ended")
	assert.Len(t, s.bmc.PowerTransitions(), before, "nothing reached the BMC")
	assert.Equal(t, "On", s.bmc.PowerState())
}

// A server whose Inventory name cannot be a host name (here: dots) cannot
// join under it, so it is never claimed; the Instance says how many were
// skipped for their name.
func TestServerNamedUnlikeAHostIsNotClaimed(t *testing.T) {
	env := newEnv(t)
	s := addServer(t, env, "rack.d.1", mac(120), map[string]string{"rack": "d"})
	createPool(t, env, ownedPool("rack-d", 1, map[string]string{"rack": "d"}))
	require.Eventually(t, func() bool {
		insts := instancesOf(t, env, "rack-d")
		if len(insts) != 1 {
			return false
		}
		c := conditions.Get(insts[0].Status.Conditions, equinixv1.InstanceServerClaimed)
		return c != nil && c.Reason == equinixv1.ReasonNoFreeServer && strings.Contains(c.Message, "1 otherwise free server(s) are skipped for their name")
	}, wait, tick, "the Instance never said why the server was skipped")
	assert.Empty(t, claims(t, env))
	assert.Len(t, s.bmc.PowerTransitions(), 1, "only the test switched it off")
}
