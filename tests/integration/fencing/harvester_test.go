package fencing

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/nodedown"
)

// Harvester's own node-down controller (tests/nodedown runs the code of
// the harvester module go.mod pins) taints a node whose kubelet went
// silent: kubevirt.io/drain after the period of vm-force-reset-policy,
// node.kubernetes.io/out-of-service (no value) after vmMigrationTimeout
// more, without asking the BMC; it takes both away when the node is Ready.

// harvesterView is what Harvester's controller reads of a node, for the
// messages: its Ready condition, its taints, and the policy.
func harvesterView(t *testing.T, env *framework.Env, name string) string {
	t.Helper()
	n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	policy := "none"
	if s, err := env.Client.HarvesterhciV1beta1().Settings().Get(env.Ctx, harvester.VMForceResetPolicySettingName, metav1.GetOptions{}); err == nil {
		policy = s.EffectiveValue()
	}
	return fmt.Sprintf("conditions %+v, taints %+v, %s %s", n.Status.Conditions, n.Spec.Taints, harvester.VMForceResetPolicySettingName, policy)
}

// drained reports whether Harvester's controller handled the node: its
// drain taint on, its Drained condition True.
func drained(t *testing.T, env *framework.Env, name string) bool {
	t.Helper()
	n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	for _, c := range n.Status.Conditions {
		if c.Type == harvester.NodeConditionDrained {
			return c.Status == corev1.ConditionTrue && hasTaint(t, env, name, harvester.TaintKubevirtDrain)
		}
	}
	return false
}

// With Harvester's handling on (period 2 s, vmMigrationTimeout 8 s) and a
// grace period of ten minutes, the fence follows Harvester's clock: the
// server is switched off, once, and the node tainted by the fencer before
// Harvester's own out-of-service taint is due (Harvester puts its own on
// only where it finds none, so the taint on the node is the fencer's). Back
// Ready, both Harvester and the fencer take their taints away.
func TestFenceComesBeforeHarvestersOwnTaint(t *testing.T) {
	env := newEnv(t, settings{grace: 10 * time.Minute})
	hd := nodedown.Start(t, env.Cluster)
	env.UseNodeDownPolicy(framework.NodeDownPolicy{Enable: true, Period: 2, VMMigrationTimeout: 8})
	env.CreateReadyNode("hv-peer")
	sim, _ := redfishHost(t, env, "hv-dead")

	env.SetNodeReady("hv-dead", false)
	c := fenceReason(t, env, "hv-dead", metav1.ConditionTrue, equinixv1.ReasonFenced)
	assert.Contains(t, c.Message, "is off")
	env.Eventually(func() bool { return drained(t, env, "hv-dead") }, time.Minute,
		"Harvester's controller never drained the node; its log:\n%s", hd.Log())
	taint := outOfService(t, env, "hv-dead")
	require.NotNil(t, taint)
	assert.Equal(t, equinixv1.TaintOutOfServiceValue, taint.Value,
		"Harvester's own out-of-service taint (no value) landed before the fence's")
	assert.Equal(t, []string{"ForceOff"}, sim.Resets())
	env.Eventually(func() bool { return nodeEvent(env, "hv-dead", equinixv1.ReasonFenceGracePeriod) }, 10*time.Second, "no Event of the grace period")
	assert.False(t, nodeEvent(env, "hv-dead", equinixv1.ReasonFenceTaintedNotFenced))
	assert.Equal(t, 0.0, metric(t, "equinix_addon_nodes_tainted_unfenced", nil))

	require.NoError(t, sim.SetPowerState("On"))
	env.SetNodeReady("hv-dead", true)
	fenceReason(t, env, "hv-dead", metav1.ConditionFalse, equinixv1.ReasonFenceLifted)
	env.Eventually(func() bool {
		return outOfService(t, env, "hv-dead") == nil && !hasTaint(t, env, "hv-dead", harvester.TaintKubevirtDrain)
	}, time.Minute, "the taints stayed on a node Ready again")
	assert.Equal(t, []string{"ForceOff"}, sim.Resets())
	env.WaitPolls("hv-dead", 2)
	assert.False(t, nodeEvent(env, "hv-dead", equinixv1.ReasonFenceTaintedNotFenced), "the lifted fence was reported as a taint without a fence")
}

// A server whose BMC cannot be reached is never switched off, nor its node
// tainted by the fencer; Harvester's handling taints it all the same. That
// node is tainted but not fenced: a Warning Event on the Node says so, and
// equinix_addon_nodes_tainted_unfenced counts it (the chart's alert
// EquinixNodeTaintedNotFenced fires on it). Once the BMC answers, the
// server is switched off and the node fenced under the taint already there.
func TestHarvestersTaintOnAServerNotConfirmedOffIsReported(t *testing.T) {
	env := newEnv(t, settings{grace: 10 * time.Minute})
	hd := nodedown.Start(t, env.Cluster)
	env.UseNodeDownPolicy(framework.NodeDownPolicy{Enable: true, Period: 1, VMMigrationTimeout: 1})
	env.CreateReadyNode("hv-peer")
	sim, srv := redfishHost(t, env, "hv-dark")
	require.NoError(t, srv.GoAway())

	env.SetNodeReady("hv-dark", false)
	env.Eventually(func() bool { return outOfService(t, env, "hv-dark") != nil }, time.Minute,
		"Harvester's controller never tainted the node (%s); its log:\n%s", harvesterView(t, env, "hv-dark"), hd.Log())
	assert.Empty(t, outOfService(t, env, "hv-dark").Value, "the taint is Harvester's")
	env.Eventually(func() bool { return nodeEvent(env, "hv-dark", equinixv1.ReasonFenceTaintedNotFenced) }, time.Minute,
		"no Event says the node is tainted but not fenced: %s", describe(fenced(t, env, "hv-dark")))
	assert.Equal(t, 1.0, metric(t, "equinix_addon_nodes_tainted_unfenced", nil))
	c := fenceReason(t, env, "hv-dark", metav1.ConditionFalse, equinixv1.ReasonFenceHeldBMC)
	assert.Contains(t, c.Message, "not fenced")
	assert.Empty(t, sim.Resets())

	require.NoError(t, srv.ComeBack())
	fenceReason(t, env, "hv-dark", metav1.ConditionTrue, equinixv1.ReasonFenced)
	assert.Equal(t, "Off", sim.PowerState())
	assert.Equal(t, []string{"ForceOff"}, sim.Resets())
	env.Eventually(func() bool { return metric(t, "equinix_addon_nodes_tainted_unfenced", nil) == 0 }, 10*time.Second,
		"the node is still counted as tainted but not fenced")
}

// A controller that stopped with a power-off sent (its intent stored) and
// not yet seen finds, after its restart, Harvester's out-of-service taint on
// the node: that taint says nothing of the server, which is still on, so
// the node is not taken as fenced; it is reported, and fenced once the
// server shows off. No command is sent again.
func TestRestartUnderHarvestersTaintReadsThePower(t *testing.T) {
	env := newEnv(t, settings{})
	hd := nodedown.Start(t, env.Cluster)
	env.UseNodeDownPolicy(framework.NodeDownPolicy{Enable: true, Period: 1, VMMigrationTimeout: 1})
	env.CreateReadyNode("hv-peer")
	sim, _ := redfishHost(t, env, "hv-crash")
	env.StopController()

	inv := env.Inventory("hv-crash")
	inv.Status.Conditions = append(inv.Status.Conditions, metav1.Condition{Type: equinixv1.BMCFenced, Status: metav1.ConditionUnknown,
		Reason: equinixv1.ReasonFencePowerOffSent, Message: "the power-off was sent", LastTransitionTime: metav1.Now(),
		ObservedGeneration: inv.Generation})
	_, err := env.Client.MetalV1alpha1().Inventories(ns).UpdateStatus(env.Ctx, inv, metav1.UpdateOptions{})
	require.NoError(t, err)
	env.SetNodeReady("hv-crash", false)
	env.Eventually(func() bool { return outOfService(t, env, "hv-crash") != nil }, time.Minute,
		"Harvester's controller never tainted the node; its log:\n%s", hd.Log())

	start(env, settings{})
	env.Eventually(func() bool { return nodeEvent(env, "hv-crash", equinixv1.ReasonFenceTaintedNotFenced) }, time.Minute,
		"no Event says the node is tainted but not fenced: %s", describe(fenced(t, env, "hv-crash")))
	env.WaitPolls("hv-crash", 3)
	c := fenced(t, env, "hv-crash")
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionUnknown, c.Status, "a server still on was taken as fenced: %s", describe(c))
	assert.Empty(t, sim.Resets(), "the power-off was sent again")

	require.NoError(t, sim.SetPowerState("Off"))
	fenceReason(t, env, "hv-crash", metav1.ConditionTrue, equinixv1.ReasonFenced)
	assert.Empty(t, sim.Resets())
}

// While a Harvester upgrade is under way its nodes reboot in turn, and
// Harvester's own handling stands back: so does the fence
// (FenceHeldUpgrade). Once the upgrade has succeeded, the node is fenced.
func TestHarvesterUpgradeHoldsTheFence(t *testing.T) {
	env := newEnv(t, settings{})
	env.InstallHarvesterUpgradeCRD()
	env.CreateReadyNode("hv-peer")
	sim, _ := redfishHost(t, env, "hv-rebooting")
	dyn, err := dynamic.NewForConfig(env.Cluster.RESTConfig)
	require.NoError(t, err)
	upgrades := dyn.Resource(schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "upgrades"}).
		Namespace(harvester.UpgradeNamespace)
	up := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "harvesterhci.io/v1beta1", "kind": "Upgrade",
		"metadata": map[string]any{"name": "hvst-upgrade-fence", "namespace": harvester.UpgradeNamespace,
			"labels": map[string]any{harvester.LabelUpgradeState: "UpgradingNodes"}},
		"spec": map[string]any{"version": "v1.8.1"},
	}}
	up, err = upgrades.Create(env.Ctx, up, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = upgrades.Delete(env.Ctx, up.GetName(), metav1.DeleteOptions{}) })

	env.SetNodeReady("hv-rebooting", false)
	c := fenceReason(t, env, "hv-rebooting", metav1.ConditionFalse, equinixv1.ReasonFenceHeldUpgrade)
	assert.Contains(t, c.Message, "hvst-upgrade-fence is under way")
	env.WaitPolls("hv-rebooting", 2)
	assert.Empty(t, sim.Resets())
	assert.False(t, tainted(t, env, "hv-rebooting"))

	up.SetLabels(map[string]string{harvester.LabelUpgradeState: harvester.UpgradeSucceeded})
	_, err = upgrades.Update(env.Ctx, up, metav1.UpdateOptions{})
	require.NoError(t, err)
	fenceReason(t, env, "hv-rebooting", metav1.ConditionTrue, equinixv1.ReasonFenced)
	assert.Equal(t, []string{"ForceOff"}, sim.Resets())
}

// A kubelet's last Ready, written just before the power-off landed, makes
// Harvester take the out-of-service taint away (by key, the fencer's too).
// The server is off and the fence stands: once the node is NotReady again
// the fencer puts its taint back at once, without waiting for Harvester's
// own, which comes only after its period and migration timeout again.
func TestFenceTaintComesBackAfterHarvesterTookItAway(t *testing.T) {
	env := newEnv(t, settings{})
	hd := nodedown.Start(t, env.Cluster)
	// Harvester's own taint would come back a minute after the node is
	// Unknown again: long after the fencer's.
	env.UseNodeDownPolicy(framework.NodeDownPolicy{Enable: true, Period: 30, VMMigrationTimeout: 30})
	env.CreateReadyNode("hv-peer")
	sim, _ := redfishHost(t, env, "hv-stale")

	env.SetNodeReady("hv-stale", false)
	fenceReason(t, env, "hv-stale", metav1.ConditionTrue, equinixv1.ReasonFenced)
	require.True(t, tainted(t, env, "hv-stale"))

	env.SetNodeReady("hv-stale", true)
	env.Eventually(func() bool { return outOfService(t, env, "hv-stale") == nil }, time.Minute,
		"Harvester's controller never took the taint off the Ready node; its log:\n%s", hd.Log())
	env.Eventually(func() bool {
		c := fenced(t, env, "hv-stale")
		return c != nil && c.Status == metav1.ConditionTrue && contains(c.Message, "put back once the node is NotReady again")
	}, time.Minute, "the fence did not stand for a Ready node whose server is off: %s", describe(fenced(t, env, "hv-stale")))

	env.SetNodeReady("hv-stale", false)
	env.Eventually(func() bool { return tainted(t, env, "hv-stale") }, 20*time.Second,
		"the fencer did not put its taint back on the NotReady node: %s", describe(fenced(t, env, "hv-stale")))
	assert.True(t, nodeEvent(env, "hv-stale", equinixv1.ReasonFenced))
	assert.Equal(t, []string{"ForceOff"}, sim.Resets())
	assert.Equal(t, "Off", sim.PowerState())
}

// Harvester's handler writes its drain taint and then, in a second write
// never retried, its condition Drained; a write of the node in between
// (the fence's taint, a hardware condition) makes the second fail. Left
// with the taint and without the condition, the handler dereferences the
// missing condition on every pass and Harvester's process dies, again and
// again (its runner here starts it again, as the kubelet does), and the
// out-of-service taint never comes. The fencer writes the condition as
// Harvester would have, Harvester stops failing and goes on: its
// out-of-service taint lands vmMigrationTimeout later (on a server still
// on here: reported).
func TestHarvesterLeftWithoutItsDrainedConditionIsHelpedOn(t *testing.T) {
	env := newEnv(t, settings{grace: 10 * time.Minute})
	hd := nodedown.Start(t, env.Cluster)
	// Harvester would not drain on its own for ten minutes.
	env.UseNodeDownPolicy(framework.NodeDownPolicy{Enable: true, Period: 600, VMMigrationTimeout: 3})
	env.CreateReadyNode("hv-peer")
	redfishHost(t, env, "hv-stuck")

	env.SetNodeReady("hv-stuck", false)
	// What Harvester's first write left when its second failed.
	n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, "hv-stuck", metav1.GetOptions{})
	require.NoError(t, err)
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: harvester.TaintKubevirtDrain, Effect: corev1.TaintEffectNoSchedule})
	_, err = env.Kube.CoreV1().Nodes().Update(env.Ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	env.Eventually(func() bool { return hd.Restarts() > 0 }, time.Minute, "Harvester's handler did not fail on the node; its log:\n%s", hd.Log())

	env.Eventually(func() bool { return nodeEvent(env, "hv-stuck", equinixv1.ReasonHarvesterDrainedRestored) }, time.Minute,
		"the fencer never wrote Harvester's condition: %s", harvesterView(t, env, "hv-stuck"))
	env.Eventually(func() bool { return drained(t, env, "hv-stuck") && outOfService(t, env, "hv-stuck") != nil }, time.Minute,
		"Harvester's handler did not go on (%s); its log:\n%s", harvesterView(t, env, "hv-stuck"), hd.Log())
	restarts := hd.Restarts()
	env.Eventually(func() bool { return nodeEvent(env, "hv-stuck", equinixv1.ReasonFenceTaintedNotFenced) }, time.Minute,
		"Harvester's taint on the running server was not reported: %s", describe(fenced(t, env, "hv-stuck")))
	assert.Equal(t, restarts, hd.Restarts(), "Harvester's handler still fails")
}
