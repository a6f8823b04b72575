package fencing

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
)

// A node NotReady past the grace period has its server switched off with
// one Reset, and only then its Node tainted out-of-service; every step is
// an Event on the Node. Once the node is Ready again (a person switched
// the server on), the taint goes and nothing more is sent.
func TestFenceSwitchesOffOnceThenTaintsAndLiftsWhenReady(t *testing.T) {
	env := newEnv(t, settings{})
	env.CreateReadyNode("hv-peer")
	sim, _ := redfishHost(t, env, "hv-dead")
	assert.Nil(t, fenced(t, env, "hv-dead"), "a Ready node got a Fenced condition")
	offs := metric(t, "equinix_addon_fence_actions_total", map[string]string{"action": "power-off", "result": "done"})
	taints := metric(t, "equinix_addon_fence_actions_total", map[string]string{"action": "taint", "result": "done"})

	env.SetNodeReady("hv-dead", false)
	fenceReason(t, env, "hv-dead", metav1.ConditionFalse, equinixv1.ReasonFenceGracePeriod)
	assert.False(t, tainted(t, env, "hv-dead"))
	assert.Empty(t, sim.Resets(), "a power command went out within the grace period")

	c := fenceReason(t, env, "hv-dead", metav1.ConditionTrue, equinixv1.ReasonFenced)
	assert.Contains(t, c.Message, "is off")
	assert.True(t, tainted(t, env, "hv-dead"))
	assert.Equal(t, "Off", sim.PowerState())
	for _, reason := range []string{equinixv1.ReasonFenceGracePeriod, equinixv1.ReasonFencePowerOffSending, equinixv1.ReasonFencePowerOffSent, equinixv1.ReasonFenced} {
		env.Eventually(func() bool { return nodeEvent(env, "hv-dead", reason) }, 10*time.Second, "no Event %s on the node", reason)
	}
	env.WaitPolls("hv-dead", 3)
	assert.Equal(t, []string{"ForceOff"}, sim.Resets(), "the power-off was not sent exactly once")
	assert.False(t, tainted(t, env, "hv-peer"))
	assert.Equal(t, 1.0, metric(t, "equinix_addon_fenced_nodes", nil))
	assert.Equal(t, offs+1, metric(t, "equinix_addon_fence_actions_total", map[string]string{"action": "power-off", "result": "done"}))
	assert.Equal(t, taints+1, metric(t, "equinix_addon_fence_actions_total", map[string]string{"action": "taint", "result": "done"}))

	require.NoError(t, sim.SetPowerState("On"))
	env.SetNodeReady("hv-dead", true)
	fenceReason(t, env, "hv-dead", metav1.ConditionFalse, equinixv1.ReasonFenceLifted)
	assert.False(t, tainted(t, env, "hv-dead"))
	env.Eventually(func() bool { return nodeEvent(env, "hv-dead", equinixv1.ReasonFenceLifted) }, 10*time.Second, "no Event of the lifted fence")
	env.WaitPolls("hv-dead", 2)
	assert.Equal(t, []string{"ForceOff"}, sim.Resets())
	assert.Equal(t, 0.0, metric(t, "equinix_addon_fenced_nodes", nil))
}

// A server that is off already is fenced as it is: nothing is sent.
func TestFenceServerOffAlreadySendsNothing(t *testing.T) {
	env := newEnv(t, settings{})
	env.CreateReadyNode("hv-peer")
	sim, _ := redfishHost(t, env, "hv-off")
	require.NoError(t, sim.SetPowerState("Off"))

	env.SetNodeReady("hv-off", false)
	c := fenceReason(t, env, "hv-off", metav1.ConditionTrue, equinixv1.ReasonFenced)
	assert.Contains(t, c.Message, "was off already (nothing was sent)")
	assert.True(t, tainted(t, env, "hv-off"))
	assert.Empty(t, sim.Resets())
}

// A BMC that cannot be reached cannot confirm the server is off: a server
// that may still run may still write to its volumes, so the node is never
// tainted, and the condition says why.
func TestFenceUnreachableBMCNeverTaints(t *testing.T) {
	env := newEnv(t, settings{})
	env.CreateReadyNode("hv-peer")
	sim, srv := redfishHost(t, env, "hv-dark")
	require.NoError(t, srv.GoAway())

	env.SetNodeReady("hv-dark", false)
	c := fenceReason(t, env, "hv-dark", metav1.ConditionFalse, equinixv1.ReasonFenceHeldBMC)
	assert.Contains(t, c.Message, "not fenced")
	env.Eventually(func() bool { return nodeEvent(env, "hv-dark", equinixv1.ReasonFenceHeldBMC) }, 10*time.Second, "no Event on the node")
	// The guard is past the grace period: the fence was decided against.
	assert.False(t, tainted(t, env, "hv-dark"), "a node whose server was never confirmed off was tainted")
	assert.Empty(t, sim.Resets())

	// The BMC comes back: the server is switched off, then the node is
	// tainted.
	require.NoError(t, srv.ComeBack())
	fenceReason(t, env, "hv-dark", metav1.ConditionTrue, equinixv1.ReasonFenced)
	assert.True(t, tainted(t, env, "hv-dark"))
	assert.Equal(t, []string{"ForceOff"}, sim.Resets())
}

// Never more nodes fenced at once than --fencing-max-fenced: the second
// dead node waits, and is fenced once the first is back.
func TestFenceBound(t *testing.T) {
	env := newEnv(t, settings{maxFenced: 1})
	env.CreateReadyNode("hv-peer-1")
	env.CreateReadyNode("hv-peer-2")
	simA, _ := redfishHost(t, env, "hv-a")
	simB, _ := redfishHost(t, env, "hv-b")

	env.SetNodeReady("hv-a", false)
	env.SetNodeReady("hv-b", false)
	var first, second string
	env.Eventually(func() bool {
		a, b := fenced(t, env, "hv-a"), fenced(t, env, "hv-b")
		switch {
		case a == nil || b == nil:
			return false
		case a.Reason == equinixv1.ReasonFenced && b.Reason == equinixv1.ReasonFenceHeldByBound:
			first, second = "hv-a", "hv-b"
		case b.Reason == equinixv1.ReasonFenced && a.Reason == equinixv1.ReasonFenceHeldByBound:
			first, second = "hv-b", "hv-a"
		default:
			return false
		}
		return true
	}, time.Minute, "one node was not fenced while the other waited for the bound")
	assert.Contains(t, fenced(t, env, second).Message, "the most --fencing-max-fenced allows (1)")
	assert.Len(t, append(simA.Resets(), simB.Resets()...), 1, "more than one server was switched off")
	assert.False(t, tainted(t, env, second))

	// A person switches the first server on; its kubelet is back.
	sims := map[string]interface{ SetPowerState(string) error }{"hv-a": simA, "hv-b": simB}
	require.NoError(t, sims[first].SetPowerState("On"))
	env.SetNodeReady(first, true)
	fenceReason(t, env, first, metav1.ConditionFalse, equinixv1.ReasonFenceLifted)
	fenceReason(t, env, second, metav1.ConditionTrue, equinixv1.ReasonFenced)
	assert.True(t, tainted(t, env, second))
	assert.False(t, tainted(t, env, first))
}

// More than half of the nodes NotReady looks like the controller's side
// cut off: nobody is fenced. So does the controller's own node NotReady.
func TestFenceQuorumGuard(t *testing.T) {
	env := newEnv(t, settings{maxFenced: 3})
	simA, _ := redfishHost(t, env, "hv-a")
	simB, _ := redfishHost(t, env, "hv-b")

	// Two of three nodes (hv-own, hv-a, hv-b) NotReady.
	env.SetNodeReady("hv-a", false)
	env.SetNodeReady("hv-b", false)
	c := fenceReason(t, env, "hv-a", metav1.ConditionFalse, equinixv1.ReasonFenceHeldByQuorum)
	assert.Contains(t, c.Message, "2 of 3 nodes are NotReady")
	fenceReason(t, env, "hv-b", metav1.ConditionFalse, equinixv1.ReasonFenceHeldByQuorum)
	env.WaitPolls("hv-a", 2)
	assert.Empty(t, append(simA.Resets(), simB.Resets()...))
	assert.False(t, tainted(t, env, "hv-a"))

	// One of four NotReady, but it is the controller's own node.
	env.CreateReadyNode("hv-peer")
	env.SetNodeReady("hv-b", true)
	env.SetNodeReady(ownNode, false)
	env.Eventually(func() bool {
		c = fenced(t, env, "hv-a")
		return c != nil && c.Reason == equinixv1.ReasonFenceHeldByQuorum && contains(c.Message, "own node")
	}, time.Minute, "the controller's own NotReady node did not hold the fence: %s", describe(c))
	assert.Empty(t, simA.Resets())

	// The controller's node is back: hv-a is fenced.
	env.SetNodeReady(ownNode, true)
	fenceReason(t, env, "hv-a", metav1.ConditionTrue, equinixv1.ReasonFenced)
	assert.Equal(t, []string{"ForceOff"}, simA.Resets())
}

// The controller never fences the node it runs on, nor a node in
// maintenance mode.
func TestFenceNeverOwnNodeNorMaintenance(t *testing.T) {
	env := newEnv(t, settings{maxFenced: 3})
	env.CreateReadyNode("hv-peer-1")
	env.CreateReadyNode("hv-peer-2")
	env.CreateReadyNode("hv-peer-3")
	simOwn, _ := redfishHost(t, env, ownNode)
	simMaint, _ := redfishHost(t, env, "hv-maint")

	env.SetMaintenance("hv-maint", true)
	env.SetNodeReady("hv-maint", false)
	env.SetNodeReady(ownNode, false)
	c := fenceReason(t, env, ownNode, metav1.ConditionFalse, equinixv1.ReasonFenceHeldOwnNode)
	assert.Contains(t, c.Message, "runs the controller")
	c = fenceReason(t, env, "hv-maint", metav1.ConditionFalse, equinixv1.ReasonFenceHeldMaintenance)
	assert.Contains(t, c.Message, "maintenance mode")
	env.WaitPolls("hv-maint", 2)
	assert.Empty(t, simOwn.Resets())
	assert.Empty(t, simMaint.Resets())
	assert.False(t, tainted(t, env, ownNode))
	assert.False(t, tainted(t, env, "hv-maint"))
}

// A controller that stopped after storing the power-off's intent, before
// (or while) the command went out, never sends it again: the new one only
// reads the power, and taints the node once the server shows off.
func TestFenceRestartAfterIntentSendsNoSecondCommand(t *testing.T) {
	env := newEnv(t, settings{})
	env.CreateReadyNode("hv-peer")
	sim, _ := redfishHost(t, env, "hv-crash")
	env.StopController()

	// What the stopped controller had stored: the intent, the server
	// still on (the command never reached the BMC).
	inv := env.Inventory("hv-crash")
	inv.Status.Conditions = append(inv.Status.Conditions, metav1.Condition{Type: equinixv1.BMCFenced, Status: metav1.ConditionUnknown,
		Reason: equinixv1.ReasonFencePowerOffSending, Message: "sending the power-off", LastTransitionTime: metav1.Now(),
		ObservedGeneration: inv.Generation})
	_, err := env.Client.MetalV1alpha1().Inventories(ns).UpdateStatus(env.Ctx, inv, metav1.UpdateOptions{})
	require.NoError(t, err)
	env.SetNodeReady("hv-crash", false)

	start(env, settings{})
	env.WaitPolls("hv-crash", 4)
	assert.Empty(t, sim.Resets(), "the power-off was sent again after the restart")
	assert.Equal(t, metav1.ConditionUnknown, fenced(t, env, "hv-crash").Status)
	assert.False(t, tainted(t, env, "hv-crash"), "tainted before the server showed off")

	// The command had landed after all: the server goes off.
	require.NoError(t, sim.SetPowerState("Off"))
	fenceReason(t, env, "hv-crash", metav1.ConditionTrue, equinixv1.ReasonFenced)
	assert.True(t, tainted(t, env, "hv-crash"))
	assert.Empty(t, sim.Resets())

	// A restart once fenced changes nothing.
	restart(env, settings{})
	env.WaitPolls("hv-crash", 2)
	assert.Empty(t, sim.Resets())
	assert.True(t, tainted(t, env, "hv-crash"))
}

// With --fencing-power-on the addon switches a fenced server back on once
// its node lists no attached volume: one command; the taint goes once the
// node is Ready.
func TestFencePowerOnAfterVolumesDetached(t *testing.T) {
	env := newEnv(t, settings{powerOn: true})
	env.CreateReadyNode("hv-peer")
	sim, _ := redfishHost(t, env, "hv-back")

	env.SetNodeReady("hv-back", false)
	fenceReason(t, env, "hv-back", metav1.ConditionTrue, equinixv1.ReasonFencePowerOnSent)
	assert.True(t, tainted(t, env, "hv-back"))
	env.Eventually(func() bool { return sim.PowerState() == "On" }, 30*time.Second, "the server was not switched on")
	env.WaitPolls("hv-back", 2)
	assert.Equal(t, []string{"ForceOff", "On"}, sim.Resets())

	env.SetNodeReady("hv-back", true)
	fenceReason(t, env, "hv-back", metav1.ConditionFalse, equinixv1.ReasonFenceLifted)
	assert.False(t, tainted(t, env, "hv-back"))
	assert.Equal(t, []string{"ForceOff", "On"}, sim.Resets())
}

// The same over IPMI (OpenIPMI's ipmi_sim): one Chassis Control power
// down, then the taint.
func TestFenceIPMI(t *testing.T) {
	sim := ipmisim.Require(t, ipmisim.Options{Username: bmcUser, Password: ipmiPassword})
	env := newEnv(t, settings{})
	env.CreateReadyNode("hv-peer")
	env.CreateReadyNode("hv-ipmi")
	env.CreateBMCSecret("hv-ipmi", bmcUser, ipmiPassword)
	env.CreateInventory(framework.IPMIInventory("hv-ipmi", sim.Host, sim.Port))
	authenticated(t, env, "hv-ipmi")

	env.SetNodeReady("hv-ipmi", false)
	fenceReason(t, env, "hv-ipmi", metav1.ConditionTrue, equinixv1.ReasonFenced)
	assert.True(t, tainted(t, env, "hv-ipmi"))
	env.WaitPolls("hv-ipmi", 3)
	assert.Equal(t, []byte{0}, sim.ChassisControls(), "not exactly one power down")
}

// A Ready posted while the server is off (the kubelet's last word before
// the power-off landed) does not lift the fence: the taint stays, and the
// node keeps its place under the bound, until the server is on.
func TestFenceStaysWhileServerOffDespiteReady(t *testing.T) {
	env := newEnv(t, settings{})
	env.CreateReadyNode("hv-peer")
	sim, _ := redfishHost(t, env, "hv-stale")

	env.SetNodeReady("hv-stale", false)
	fenceReason(t, env, "hv-stale", metav1.ConditionTrue, equinixv1.ReasonFenced)
	env.SetNodeReady("hv-stale", true)
	env.Eventually(func() bool {
		c := fenced(t, env, "hv-stale")
		return c != nil && c.Status == metav1.ConditionTrue && contains(c.Message, "reports Ready, but its server is off")
	}, time.Minute, "a Ready node whose server is off was not kept fenced: %s", describe(fenced(t, env, "hv-stale")))
	assert.True(t, tainted(t, env, "hv-stale"))

	require.NoError(t, sim.SetPowerState("On"))
	fenceReason(t, env, "hv-stale", metav1.ConditionFalse, equinixv1.ReasonFenceLifted)
	assert.False(t, tainted(t, env, "hv-stale"))
	assert.Equal(t, []string{"ForceOff"}, sim.Resets())
}
