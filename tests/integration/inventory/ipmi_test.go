package inventory

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
)

// A node whose BMC speaks IPMI (OpenIPMI's ipmi_sim) gets the same: its
// FRU's facts as labels, each new SEL entry and health change once as an
// Event across polls and a controller restart, and power requests only in
// maintenance mode, one Chassis Control each. Without ipmi_sim the test is
// skipped, and fails under CI=true, where scripts/bmc-tools installs it.
func TestIPMINodeFactsEventsOnceAndPower(t *testing.T) {
	sim := ipmisim.Require(t, ipmisim.Options{Username: bmcUser, Password: ipmiPassword,
		Manufacturer: "Dell Inc.", Model: "PowerEdge R650", SerialNumber: "7XJ2KQ3"})
	env := newEnv(t)
	env.CreateReadyNode("ipmi-node")
	env.CreateBMCSecret("ipmi-node", bmcUser, ipmiPassword)
	env.CreateInventory(framework.IPMIInventory("ipmi-node", sim.Host, sim.Port))

	env.Eventually(func() bool {
		n := node(t, env, "ipmi-node")
		return n.Labels[equinixv1.LabelManufacturer] == "DellInc" && n.Labels[equinixv1.LabelModel] == "PowerEdgeR650" &&
			n.Labels[equinixv1.LabelSerialNumber] == "7XJ2KQ3"
	}, time.Minute, "the node did not get its hardware labels")
	assert.Contains(t, node(t, env, "ipmi-node").Annotations[equinixv1.AnnotationHardwareSource], "IPMI BMC at 127.0.0.1:")
	env.Eventually(func() bool {
		return ready(env, "ipmi-node") && env.Inventory("ipmi-node").Status.MachinePowerState == "on"
	}, time.Minute, "the Inventory does not report a reachable BMC that is on")

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
	env.WaitPolls("ipmi-node", 3)
	restart(env)
	// Counted before the entry is logged: the restarted controller may
	// forward it at once.
	before := len(forwarded(t, env, "ipmi-node"))
	_, err = sim.AddSEL(0x0c, ipmisim.SensorDIMM, 0x6f, 0x00, 2, 0)
	require.NoError(t, err)
	env.Eventually(func() bool { return len(forwarded(t, env, "ipmi-node")) == before+1 }, time.Minute,
		"the entry logged across the restart was not forwarded")
	env.WaitPolls("ipmi-node", 3)
	fw := forwarded(t, env, "ipmi-node")
	for id, msgs := range fw {
		assert.Len(t, msgs, 1, "machine event %s forwarded more than once: %v", id, msgs)
	}
	assert.Len(t, fw, before+1)

	job := requestPower(t, env, "ipmi-node", seederv1alpha1.PowerOperationShutdown)
	assert.Equal(t, seederv1alpha1.ActionStatusFailed, powerEnded(t, env, "ipmi-node", job))
	assert.Empty(t, sim.ChassisControls(), "a Chassis Control went out without maintenance mode")
	env.SetMaintenance("ipmi-node", true)
	job = requestPower(t, env, "ipmi-node", seederv1alpha1.PowerOperationShutdown)
	assert.Equal(t, seederv1alpha1.ActionStatusComplete, powerEnded(t, env, "ipmi-node", job))
	env.Eventually(func() bool {
		on, err := sim.PowerOn()
		return err == nil && !on && env.Inventory("ipmi-node").Status.MachinePowerState == "off"
	}, time.Minute, "the server was not switched off")
	job = requestPower(t, env, "ipmi-node", seederv1alpha1.PowerOperationPowerOn)
	assert.Equal(t, seederv1alpha1.ActionStatusComplete, powerEnded(t, env, "ipmi-node", job))
	env.Eventually(func() bool { return env.Inventory("ipmi-node").Status.MachinePowerState == "on" }, time.Minute,
		"the server was not switched on")
	// ipmi_sim's trace is read as it prints it, which may come after the
	// power state the controller read back.
	env.Eventually(func() bool { return len(sim.ChassisControls()) >= 2 }, time.Minute, "the Chassis Controls were not traced")
	assert.Equal(t, []byte{0, 1}, sim.ChassisControls(), "one Chassis Control per request: down, then up")
	env.AssertAbsent(ipmiPassword)
}

// An IPMI BMC that never answers is unreachable, as a Redfish one whose
// port refuses connections is, not a BMC error.
func TestSilentIPMIBMCIsUnreachable(t *testing.T) {
	env := newEnv(t)
	silent, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Close() })
	env.CreateReadyNode("silent")
	env.CreateBMCSecret("silent", bmcUser, ipmiPassword)
	env.CreateInventory(framework.IPMIInventory("silent", "127.0.0.1", silent.LocalAddr().(*net.UDPAddr).Port))
	env.Eventually(func() bool {
		return hasCondition(env, "silent", equinixv1.BMCReachable, metav1.ConditionFalse, equinixv1.ReasonBMCUnreachable) &&
			env.Inventory("silent").Status.Status == seederv1alpha1.InventoryBMCUnreachable
	}, time.Minute, "a silent IPMI BMC was not reported unreachable")
}
