package inventory

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// powerActions records every status.powerAction an Inventory is stored
// with, as the apiserver's watch delivers each write: a key that is absent
// is absent from the map; power is the status.machinePowerState of each.
type powerActions struct {
	mu    sync.Mutex
	seen  []map[string]interface{}
	power []string
}

func watchPowerActions(t *testing.T, env *framework.Env, name string) *powerActions {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.Cluster.RESTConfig)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(env.Ctx)
	t.Cleanup(cancel)
	w, err := dyn.Resource(inventoryGVR).Namespace(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	require.NoError(t, err)
	p := &powerActions{}
	go func() {
		for ev := range w.ResultChan() {
			obj, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			pa, _, _ := unstructured.NestedMap(obj.Object, "status", "powerAction")
			power, _, _ := unstructured.NestedString(obj.Object, "status", "machinePowerState")
			p.mu.Lock()
			p.seen = append(p.seen, pa)
			p.power = append(p.power, power)
			p.mu.Unlock()
		}
	}()
	return p
}

// pendingSeen reports whether a request named job was stored without the
// actionStatus key: what makes the UI show the host as stopping, starting
// or rebooting.
func (p *powerActions) pendingSeen(job string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pa := range p.seen {
		_, has := pa["actionStatus"]
		if pa["lastJobName"] == job && !has {
			return true
		}
	}
	return false
}

// Power requests as Harvester's node action writes them: outside
// maintenance mode one ends failed at once, with a condition and a Warning
// Event, and nothing reaches the BMC; in it, each is exactly one command
// (shutdown a hard off, poweron on, reboot a power cycle), pending without
// actionStatus while it is carried out, then complete with the operation in
// lastActionRequested, and the power state follows.
func TestPowerRequestsOneCommandEachInMaintenance(t *testing.T) {
	env := newEnv(t)
	sim, srv := redfishBMC(t)
	env.CreateReadyNode("pw")
	env.CreateBMCSecret("pw", bmcUser, bmcPassword)
	env.CreateInventory(framework.RedfishInventory("pw", srv))
	env.Eventually(func() bool { return ready(env, "pw") && env.Inventory("pw").Status.MachinePowerState == "on" },
		time.Minute, "never ready")
	seen := watchPowerActions(t, env, "pw")

	job := requestPower(t, env, "pw", seederv1alpha1.PowerOperationShutdown)
	assert.Equal(t, seederv1alpha1.ActionStatusFailed, powerEnded(t, env, "pw", job))
	assert.True(t, hasCondition(env, "pw", equinixv1.BMCPowerSynced, metav1.ConditionFalse, equinixv1.ReasonMaintenanceRequired))
	assert.True(t, env.EventRecorded("pw", equinixv1.ReasonMaintenanceRequired))
	assert.Contains(t, hw(env, "pw").LastPowerAction.Message, "is not in maintenance mode")
	assert.Never(t, func() bool { return len(sim.Resets()) > 0 }, 2*time.Second, 100*time.Millisecond,
		"a power command went out without maintenance mode")

	env.SetMaintenance("pw", true)
	for _, step := range []struct {
		op, reset, power string
	}{
		{seederv1alpha1.PowerOperationShutdown, "ForceOff", "off"},
		{seederv1alpha1.PowerOperationPowerOn, "On", "on"},
		{seederv1alpha1.PowerOperationReboot, "PowerCycle", "on"},
	} {
		before := len(sim.Resets())
		job := requestPower(t, env, "pw", step.op)
		assert.Equal(t, seederv1alpha1.ActionStatusComplete, powerEnded(t, env, "pw", job), step.op)
		inv := env.Inventory("pw")
		assert.Equal(t, step.op, inv.Status.PowerAction.LastActionRequested)
		assert.True(t, seen.pendingSeen(inv.Status.PowerAction.LastJobName), "%s: never stored pending, without actionStatus", step.op)
		assert.Equal(t, []string{step.reset}, sim.Resets()[before:], step.op)
		env.Eventually(func() bool { return env.Inventory("pw").Status.MachinePowerState == step.power }, time.Minute,
			"%s: machinePowerState did not follow", step.op)
	}
	assert.Never(t, func() bool { return len(sim.Resets()) != 3 }, 3*time.Second, 100*time.Millisecond, "a request was carried out twice")

	// The same operation again, and a spec edited for another reason
	// (the UI sends the whole object back): only the first is a request.
	job = requestPower(t, env, "pw", seederv1alpha1.PowerOperationReboot)
	assert.Equal(t, seederv1alpha1.ActionStatusComplete, powerEnded(t, env, "pw", job))
	env.Eventually(func() bool { return len(sim.Resets()) == 4 }, time.Minute, "the second reboot was not sent")
	patchSpec(t, env, "pw", map[string]any{"events": map[string]any{"pollingInterval": "2s"}})
	assert.Never(t, func() bool { return len(sim.Resets()) != 4 }, 3*time.Second, 100*time.Millisecond,
		"an unrelated edit of the spec repeated the last request")
	env.AssertAbsent(bmcPassword)
}

// An Inventory whose node does not exist stands for a server without a
// node: no error, it says so, its BMC is read, and it is powered on
// request without maintenance mode. Its events go to the Inventory.
func TestServerWithoutNode(t *testing.T) {
	env := newEnv(t)
	sim, srv := redfishBMC(t)
	sim.AddLogEntry("Warning", "Chassis intrusion detected")
	env.CreateBMCSecret("free-server", bmcUser, bmcPassword)
	env.CreateInventory(framework.RedfishInventory("free-server", srv))
	env.Eventually(func() bool {
		return ready(env, "free-server") && hasCondition(env, "free-server", equinixv1.BMCNodeFound, metav1.ConditionFalse, equinixv1.ReasonServerWithoutNode)
	}, time.Minute, "a server without a node did not become ready")
	assert.True(t, hasCondition(env, "free-server", equinixv1.ConditionStalled, metav1.ConditionFalse, equinixv1.ReasonInventoryReady))
	env.Eventually(func() bool {
		for _, e := range env.Events("free-server") {
			if e.InvolvedObject.Kind == "Inventory" && e.Namespace == ns && e.Reason == equinixv1.ReasonHardwareWarning {
				return true
			}
		}
		return false
	}, time.Minute, "the server's event did not go to its Inventory")

	job := requestPower(t, env, "free-server", seederv1alpha1.PowerOperationShutdown)
	assert.Equal(t, seederv1alpha1.ActionStatusComplete, powerEnded(t, env, "free-server", job))
	assert.Equal(t, []string{"ForceOff"}, sim.Resets())
}
