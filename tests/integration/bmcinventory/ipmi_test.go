package bmcinventory

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/simulator/bmcsim/ipmisim"
)

// A node whose BMC speaks IPMI (OpenIPMI's ipmi_sim) gets the same: its
// FRU's facts as labels, each new SEL entry and health change once as an
// Event across polls and a controller restart, and power commands only in
// maintenance mode, one Chassis Control per request. Without ipmi_sim the
// test is skipped, and fails under CI=true, where scripts/bmc-tools
// installs it.
func TestIPMINodeFactsEventsOnceAndPower(t *testing.T) {
	sim := ipmisim.Require(t, ipmisim.Options{Username: bmcUser, Password: ipmiPassword,
		Manufacturer: "Dell Inc.", Model: "PowerEdge R650", SerialNumber: "7XJ2KQ3"})
	env := newEnv(t)
	createNode(t, env, "ipmi-node")
	bmcSecret(t, env, "ipmi-node", bmcUser, ipmiPassword)
	create(t, env, &v1.BMCInventory{
		ObjectMeta: metav1.ObjectMeta{Name: "ipmi-node"},
		Spec: v1.BMCInventorySpec{
			NodeName:          "ipmi-node",
			BMC:               v1.BMCEndpoint{Protocol: v1.BMCProtocolIPMI, Host: sim.Host, Port: int32(sim.Port)},
			CredentialsSecret: v1.SecretReference{Name: "ipmi-node"},
			PollInterval:      &pollEvery,
		},
	})

	env.Eventually(func() bool {
		n := node(t, env, "ipmi-node")
		return n.Labels[v1.LabelManufacturer] == "DellInc" && n.Labels[v1.LabelModel] == "PowerEdgeR650" &&
			n.Labels[v1.LabelSerialNumber] == "7XJ2KQ3"
	}, time.Minute, "the node did not get its hardware labels")
	assert.Contains(t, node(t, env, "ipmi-node").Annotations[v1.AnnotationHardwareSource], "IPMI BMC at 127.0.0.1:")
	env.Eventually(func() bool {
		return hasCondition(t, env, "ipmi-node", v1.BMCReachable, metav1.ConditionTrue, v1.ReasonBMCReachable) &&
			inventory(t, env, "ipmi-node").Status.PowerState == "on"
	}, time.Minute, "the inventory does not report a reachable BMC that is on")

	// A correctable ECC error on the DIMM, logged by the BMC.
	_, err := sim.AddSEL(0x0c, ipmisim.SensorDIMM, 0x6f, 0x00, 1, 0)
	require.NoError(t, err)
	// The power supply reports a failure: a health change, and the BMC
	// logs the sensor's event itself.
	require.NoError(t, sim.SetSensorBit(ipmisim.SensorPSU, 1, true))
	env.Eventually(func() bool {
		msgs := messages(forwarded(t, env, "ipmi-node"))
		return countHolding(msgs, "Memory") >= 1 && countHolding(msgs, "PowerSupplies is") == 1
	}, time.Minute, "the SEL entry and the health change were not forwarded")
	polls(t, env, "ipmi-node", 3)
	restart(env)
	_, err = sim.AddSEL(0x0c, ipmisim.SensorDIMM, 0x6f, 0x00, 2, 0)
	require.NoError(t, err)
	before := len(forwarded(t, env, "ipmi-node"))
	env.Eventually(func() bool { return len(forwarded(t, env, "ipmi-node")) == before+1 }, time.Minute,
		"the entry logged across the restart was not forwarded")
	polls(t, env, "ipmi-node", 3)
	fw := forwarded(t, env, "ipmi-node")
	for id, msgs := range fw {
		assert.Len(t, msgs, 1, "machine event %s forwarded more than once: %v", id, msgs)
	}
	assert.Len(t, fw, before+1)

	patchSpec(t, env, "ipmi-node", map[string]any{"powerState": "off"})
	env.Eventually(func() bool {
		return hasCondition(t, env, "ipmi-node", v1.BMCPowerSynced, metav1.ConditionFalse, v1.ReasonMaintenanceRequired)
	}, time.Minute, "the power-off did not wait for maintenance mode")
	assert.Never(t, func() bool { return len(sim.ChassisControls()) > 0 }, 3*time.Second, 100*time.Millisecond,
		"a Chassis Control went out without maintenance mode")
	maintenance(t, env, "ipmi-node", true)
	env.Eventually(func() bool {
		la := inventory(t, env, "ipmi-node").Status.LastPowerAction
		on, err := sim.PowerOn()
		return err == nil && !on && la != nil && la.Result == v1.PowerResultSucceeded
	}, time.Minute, "the server was not switched off")
	patchSpec(t, env, "ipmi-node", map[string]any{"powerState": "on"})
	env.Eventually(func() bool { return len(sim.ChassisControls()) == 2 }, time.Minute, "the power-on was not sent")
	readyAgain(t, env, "ipmi-node")
	env.Eventually(func() bool {
		la := inventory(t, env, "ipmi-node").Status.LastPowerAction
		return la != nil && la.Action == v1.PowerActionOn && la.Result == v1.PowerResultSucceeded
	}, time.Minute, "the power-on did not succeed")
	assert.Equal(t, []byte{0, 1}, sim.ChassisControls(), "one Chassis Control per request: down, then up")
	env.AssertAbsent(ipmiPassword)
}
