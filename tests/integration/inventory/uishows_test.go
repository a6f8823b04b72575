package inventory

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	hardwarev1 "github.com/harvester/harvester-equinix-addon/pkg/apis/hardware/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/harvesterapi"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
)

// What the Harvester UI shows of a host's Inventory is true: a Save is not
// refused because the controller wrote meanwhile, the host stays ready for
// power actions while its BMC blips, a shutdown is complete once the host
// is off, and the power shown is fresh between hourly polls.

// newEnvWith is newEnv with more of the controller's configuration.
func newEnvWith(t *testing.T, more func(*config.Config)) *framework.Env {
	t.Helper()
	return framework.New(t, &shared, framework.Options{Mode: config.ModeSeeder, Configure: func(c *config.Config) {
		configure(c)
		more(c)
	}})
}

// The UI PUTs the copy of the Inventory it read when the page loaded. Polls
// that find nothing new write nothing, so a form left open across them
// saves without a conflict (and its resourceVersion is unchanged).
func TestUISaveAcrossPollsGetsNoConflict(t *testing.T) {
	env := newEnv(t)
	_, srv := redfishBMC(t)
	env.CreateReadyNode("form")
	env.CreateBMCSecret("form", bmcUser, bmcPassword)
	createUIInventory(t, env, "form", srv.Host, srv.Port, true, "")
	env.Eventually(func() bool { return ready(env, "form") }, time.Minute, "never ready")
	env.WaitPolls("form", 2)

	dyn, err := dynamic.NewForConfig(env.Cluster.RESTConfig)
	require.NoError(t, err)
	inventories := dyn.Resource(inventoryGVR).Namespace(ns)
	loaded, err := inventories.Get(env.Ctx, "form", metav1.GetOptions{})
	require.NoError(t, err)
	env.WaitPolls("form", 3)
	assert.Equal(t, loaded.GetResourceVersion(), env.Inventory("form").ResourceVersion, "a poll that found nothing new wrote")

	require.NoError(t, unstructured.SetNestedField(loaded.Object, "2s", "spec", "events", "pollingInterval"))
	_, err = inventories.Update(env.Ctx, loaded, metav1.UpdateOptions{})
	require.NoError(t, err, "the UI's Save of a form opened across polls")
	assert.Equal(t, "2s", env.Inventory("form").Spec.Events.PollingInterval)
}

// A BMC that blips (its web server restarts) leaves the host ready for
// Harvester's power actions, as Seeder does, while the Inventory says what
// is wrong; a request meanwhile is tried and ends failed, saying why; the
// BMC back, the next one is carried out.
func TestReadyKeptAcrossABMCBlip(t *testing.T) {
	env := newEnv(t)
	api := harvesterAPI(t, env)
	harvesterapi.SetSeederAddon(env.Ctx, t, env.Cluster, true)
	t.Cleanup(func() { harvesterapi.RemoveSeederAddon(env.Ctx, t, env.Cluster) })
	sim, srv := redfishBMC(t)
	const name = "blip"
	env.CreateReadyNode(name)
	env.CreateBMCSecret(name, bmcUser, bmcPassword)
	env.CreateInventory(framework.RedfishInventory(name, srv))
	possible := func() (harvesterapi.Response, error) { return api.PowerActionPossible(env.Ctx, name) }
	answers(t, http.StatusNoContent, possible)

	require.NoError(t, srv.GoAway())
	env.Eventually(func() bool {
		return hasCondition(env, name, equinixv1.BMCReachable, metav1.ConditionFalse, equinixv1.ReasonBMCUnreachable)
	}, time.Minute, "the blip was not reported")
	assert.Equal(t, seederv1alpha1.InventoryNodeReady, env.Inventory(name).Status.Status)
	r, err := possible()
	require.NoError(t, err)
	assert.Equal(t, http.StatusNoContent, r.Status, "Harvester refused a power action during a blip: %s", r)

	env.SetMaintenance(name, true)
	job := lastJob(env, name)
	answers(t, http.StatusNoContent, func() (harvesterapi.Response, error) {
		return api.PowerAction(env.Ctx, name, seederv1alpha1.PowerOperationReboot)
	})
	assert.Equal(t, seederv1alpha1.ActionStatusFailed, powerEnded(t, env, name, job))
	assert.Contains(t, hw(env, name).LastPowerAction.Message, "was not carried out")
	assert.Empty(t, sim.Resets())

	require.NoError(t, srv.ComeBack())
	env.Eventually(func() bool {
		return hasCondition(env, name, equinixv1.BMCReachable, metav1.ConditionTrue, equinixv1.ReasonBMCReachable)
	}, time.Minute, "the BMC's return was not seen")
	job = lastJob(env, name)
	answers(t, http.StatusNoContent, func() (harvesterapi.Response, error) {
		return api.PowerAction(env.Ctx, name, seederv1alpha1.PowerOperationReboot)
	})
	assert.Equal(t, seederv1alpha1.ActionStatusComplete, powerEnded(t, env, name, job))
	assert.Equal(t, []string{"PowerCycle"}, sim.Resets())
}

// A request is complete only once the BMC shows its effect: the UI (v1.5
// to v1.7) takes a shutdown that is complete for a host that is off, and
// from v1.8 offers Power On or Shut Down from the power shown. While the
// host powers on (the responder's PoweringOn, which a hard off skips), the
// request is pending.
func TestPowerRequestCompleteOnlyOnceSeen(t *testing.T) {
	env := newEnv(t)
	sim, srv := redfishBMCWith(t, bmcsim.Options{PowerTransition: 5 * time.Second})
	require.NoError(t, sim.SetPowerState("Off"))
	env.CreateReadyNode("slow-on")
	env.CreateBMCSecret("slow-on", bmcUser, bmcPassword)
	env.CreateInventory(framework.RedfishInventory("slow-on", srv))
	env.Eventually(func() bool {
		return ready(env, "slow-on") && env.Inventory("slow-on").Status.MachinePowerState == "off"
	},
		time.Minute, "never ready")
	env.SetMaintenance("slow-on", true)
	seen := watchPowerActions(t, env, "slow-on")

	job := requestPower(t, env, "slow-on", seederv1alpha1.PowerOperationPowerOn)
	env.Eventually(func() bool { return len(sim.Resets()) == 1 }, time.Minute, "the power-on was not sent")
	// Taken, and the host still powering on: pending.
	env.Eventually(func() bool {
		inv := env.Inventory("slow-on")
		la := hw(env, "slow-on").LastPowerAction
		return inv.Status.PowerAction.LastJobName != job && inv.Status.PowerAction.LastActionStatus == "" &&
			la != nil && la.Result == hardwarev1.PowerResultSent
	}, time.Minute, "the request taken by the BMC is not shown pending")
	assert.Equal(t, seederv1alpha1.ActionStatusComplete, powerEnded(t, env, "slow-on", job))
	inv := env.Inventory("slow-on")
	assert.Equal(t, "on", inv.Status.MachinePowerState, "complete with the host shown on")
	assert.True(t, seen.pendingSeen(inv.Status.PowerAction.LastJobName))
	assert.False(t, seen.completeSeenWhile(inv.Status.PowerAction.LastJobName, "off"), "complete was stored while the host showed off")
	assert.False(t, seen.completeSeenWhile(inv.Status.PowerAction.LastJobName, "unknown"), "complete was stored while the host powered on")
	assert.Equal(t, []string{"On"}, sim.Resets())
}

// The power shown is kept fresh between hourly polls (the UI's default
// interval; from v1.8 its Power On and Shut Down come from it): a host
// switched off by hand shows off within --bmc-power-freshness, read with
// one request and no session.
func TestPowerShownFreshBetweenPolls(t *testing.T) {
	env := newEnvWith(t, func(c *config.Config) { c.BMCPowerFreshness = 2 * time.Second })
	sim, srv := redfishBMC(t)
	env.CreateReadyNode("fresh")
	env.CreateBMCSecret("fresh", bmcUser, bmcPassword)
	createUIInventoryEvery(t, env, "fresh", srv.Host, srv.Port, true, "", "1h")
	env.Eventually(func() bool { return ready(env, "fresh") && env.Inventory("fresh").Status.MachinePowerState == "on" },
		time.Minute, "never ready")
	env.Eventually(func() bool { return sim.Sessions() == 0 }, time.Minute, "the first contact's session was not logged out")
	logins := sim.Logins().Accepted

	require.NoError(t, sim.SetPowerState("Off"))
	env.Eventually(func() bool { return env.Inventory("fresh").Status.MachinePowerState == "off" }, 30*time.Second,
		"a host switched off by hand still shows on")
	assert.Equal(t, logins, sim.Logins().Accepted, "the power was read without a session")
	require.NoError(t, sim.SetPowerState("On"))
	env.Eventually(func() bool { return env.Inventory("fresh").Status.MachinePowerState == "on" }, 30*time.Second,
		"a host switched on by hand still shows off")
}

// An IPMI BMC that stops answering on a kept session is unreachable (its
// reads, and a new session's setup, go unanswered), not a BMC error; the
// host stays ready for power actions meanwhile, and recovers.
func TestIPMIThatStopsAnsweringIsUnreachable(t *testing.T) {
	sim := ipmisim.Require(t, ipmisim.Options{Username: bmcUser, Password: ipmiPassword})
	relay := ipmisim.RequireRelay(t, sim)
	env := newEnv(t)
	env.CreateReadyNode("ipmi-gone")
	env.CreateBMCSecret("ipmi-gone", bmcUser, ipmiPassword)
	env.CreateInventory(framework.IPMIInventory("ipmi-gone", "127.0.0.1", relay.Port()))
	env.Eventually(func() bool { return ready(env, "ipmi-gone") }, time.Minute, "never ready")
	env.WaitPolls("ipmi-gone", 2)

	relay.SetDelay(time.Hour)
	env.Eventually(func() bool {
		return hasCondition(env, "ipmi-gone", equinixv1.BMCReachable, metav1.ConditionFalse, equinixv1.ReasonBMCUnreachable)
	}, time.Minute, "an IPMI BMC that stopped answering is not unreachable: %v", conditionOf(env, "ipmi-gone", equinixv1.BMCReachable))
	assert.Equal(t, seederv1alpha1.InventoryNodeReady, env.Inventory("ipmi-gone").Status.Status)
	relay.SetDelay(0)
	env.Eventually(func() bool {
		return hasCondition(env, "ipmi-gone", equinixv1.BMCReachable, metav1.ConditionTrue, equinixv1.ReasonBMCReachable)
	}, 2*time.Minute, "the BMC's return was not seen")
}

// completeSeenWhile reports whether a request named job was stored
// complete in a write that showed machinePowerState power.
func (p *powerActions) completeSeenWhile(job, power string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, pa := range p.seen {
		if pa["lastJobName"] == job && pa["actionStatus"] == seederv1alpha1.ActionStatusComplete && p.power[i] == power {
			return true
		}
	}
	return false
}
