package bmcinventory

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// Power requests of a BMC node follow the Instances' contract: one waits
// while the node is not in maintenance mode (a condition and a Warning
// Event say so, and the BMC gets nothing), and in it each request is one
// command: off, on, and a reboot (a power cycle).
func TestRedfishPowerOnlyInMaintenanceOneCommandEach(t *testing.T) {
	env := newEnv(t)
	sim, srv := redfishBMC(t)
	createNode(t, env, "rf-power")
	bmcSecret(t, env, "rf-power", bmcUser, bmcPassword)
	create(t, env, redfishInventory("rf-power", "rf-power", srv))
	env.Eventually(func() bool { return inventory(t, env, "rf-power").Status.PowerState == "on" }, time.Minute, "power never read")

	patchSpec(t, env, "rf-power", map[string]any{"powerState": "off"})
	env.Eventually(func() bool {
		return hasCondition(t, env, "rf-power", v1.BMCPowerSynced, metav1.ConditionFalse, v1.ReasonMaintenanceRequired)
	}, time.Minute, "the power-off did not say it waits for maintenance mode")
	require.True(t, env.EventRecorded("rf-power", v1.ReasonMaintenanceRequired))
	assert.Never(t, func() bool { return len(sim.Resets()) > 0 }, 3*time.Second, 100*time.Millisecond,
		"a power command went out without maintenance mode")

	maintenance(t, env, "rf-power", true)
	env.Eventually(func() bool {
		inv := inventory(t, env, "rf-power")
		la := inv.Status.LastPowerAction
		return sim.PowerState() == "Off" && inv.Status.PowerState == "off" && la != nil && la.Result == v1.PowerResultSucceeded
	}, time.Minute, "the server was not switched off")
	assert.Equal(t, []string{"ForceOff"}, sim.Resets())

	patchSpec(t, env, "rf-power", map[string]any{"powerState": "on"})
	env.Eventually(func() bool { return len(sim.Resets()) == 2 }, time.Minute, "the power-on was not sent")
	readyAgain(t, env, "rf-power")
	env.Eventually(func() bool {
		la := inventory(t, env, "rf-power").Status.LastPowerAction
		return la != nil && la.Action == v1.PowerActionOn && la.Result == v1.PowerResultSucceeded
	}, time.Minute, "the power-on did not succeed")

	patchSpec(t, env, "rf-power", map[string]any{"rebootRequestedAt": time.Now().UTC().Format(time.RFC3339)})
	env.Eventually(func() bool { return len(sim.Resets()) == 3 }, time.Minute, "the reboot was not sent")
	readyAgain(t, env, "rf-power")
	env.Eventually(func() bool {
		la := inventory(t, env, "rf-power").Status.LastPowerAction
		return la != nil && la.Action == v1.PowerActionReboot && la.Result == v1.PowerResultSucceeded
	}, time.Minute, "the reboot did not succeed")
	assert.Equal(t, []string{"ForceOff", "On", "PowerCycle"}, sim.Resets())

	// Out of maintenance mode, a reboot waits again.
	maintenance(t, env, "rf-power", false)
	patchSpec(t, env, "rf-power", map[string]any{"rebootRequestedAt": time.Now().Add(time.Second).UTC().Format(time.RFC3339)})
	env.Eventually(func() bool {
		return hasCondition(t, env, "rf-power", v1.BMCPowerSynced, metav1.ConditionFalse, v1.ReasonMaintenanceRequired)
	}, time.Minute, "the reboot did not wait for maintenance mode")
	assert.Never(t, func() bool { return len(sim.Resets()) != 3 }, 3*time.Second, 100*time.Millisecond,
		"a power command went out without maintenance mode, or a request was sent twice")
}
