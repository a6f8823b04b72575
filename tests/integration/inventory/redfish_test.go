package inventory

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// A node with a Redfish BMC gets the labels the Harvester UI reads and the
// specs as annotations; its event log entries and health changes become
// Events on the node, each once, across many polls and a restart of the
// controller; the BMC's credentials appear nowhere.
func TestRedfishNodeFactsAndEventsOnce(t *testing.T) {
	env := newEnv(t)
	sim, srv := redfishBMC(t)
	sim.AddLogEntry("Warning", "Correctable ECC error on DIMM A1")
	env.CreateReadyNode("rf-node")
	env.CreateBMCSecret("rf-node", bmcUser, bmcPassword)
	env.CreateInventory(framework.RedfishInventory("rf-node", srv))

	env.Eventually(func() bool {
		n := node(t, env, "rf-node")
		return n.Labels[equinixv1.LabelManufacturer] == "Supermicro" && n.Labels[equinixv1.LabelModel] == "SYS-510P-M" &&
			n.Labels[equinixv1.LabelSerialNumber] == "S123456X1234567" && n.Annotations[equinixv1.AnnotationBIOS] == "2.1"
	}, time.Minute, "the node did not get its hardware labels")
	n := node(t, env, "rf-node")
	assert.Equal(t, "2 x Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", n.Annotations[equinixv1.AnnotationCPUs])
	assert.Equal(t, "128GB", n.Annotations[equinixv1.AnnotationMemory])
	assert.Equal(t, "1 x 480GB SATA SSD, 1 x 3.8TB NVMe SSD", n.Annotations[equinixv1.AnnotationDrives])
	assert.Equal(t, "2 x 25Gbps", n.Annotations[equinixv1.AnnotationNICs])
	assert.Contains(t, n.Annotations[equinixv1.AnnotationHardwareSource], "Redfish BMC at 127.0.0.1:")
	env.Eventually(func() bool {
		return ready(env, "rf-node") && hasCondition(env, "rf-node", equinixv1.BMCNodeFound, metav1.ConditionTrue, equinixv1.ReasonNodeFound) &&
			hw(env, "rf-node").Health == "OK" && env.Inventory("rf-node").Status.MachinePowerState == "on"
	}, time.Minute, "the Inventory does not report a reachable, healthy BMC")

	env.Eventually(func() bool {
		return countHolding(messages(forwarded(t, env, "rf-node")), "Correctable ECC error on DIMM A1") == 1
	}, time.Minute, "the event log entry was not forwarded")

	// A power supply fails and a second entry is logged.
	require.NoError(t, sim.SetHealth(bmcsim.PartPowerSupply, "PSU 2", bmcsim.HealthCritical))
	sim.AddLogEntry("Critical", "Power supply PSU 2 failed")
	env.Eventually(func() bool {
		msgs := messages(forwarded(t, env, "rf-node"))
		return countHolding(msgs, "PowerSupplies is Critical (PSU 2: Critical), was OK") == 1 && countHolding(msgs, "Power supply PSU 2 failed") == 1
	}, time.Minute, "the health change and the new entry were not forwarded")
	env.Eventually(func() bool { return hw(env, "rf-node").Health == "Critical" }, time.Minute, "status.hardware.health")
	for _, e := range env.Events("rf-node") {
		if e.Annotations[equinixv1.AnnotationMachineEventID] != "" && e.Reason == equinixv1.ReasonHardwareWarning {
			assert.Equal(t, "Warning", e.Type)
		}
	}

	env.WaitPolls("rf-node", 3)
	restart(env)
	sim.AddLogEntry("OK", "System boot completed")
	env.Eventually(func() bool {
		return countHolding(messages(forwarded(t, env, "rf-node")), "System boot completed") == 1
	}, time.Minute, "the entry logged across the restart was not forwarded")
	env.WaitPolls("rf-node", 3)

	fw := forwarded(t, env, "rf-node")
	for id, msgs := range fw {
		assert.Len(t, msgs, 1, "machine event %s forwarded more than once: %v", id, msgs)
	}
	assert.Len(t, fw, 4, "one Event per entry and per health change: %v", fw)
	env.AssertAbsent(bmcPassword)
}

// events.enabled false: the BMC is still read at pollingInterval (facts,
// health, power, reachability), but none of its events becomes an Event.
// Turned on, only what the BMC logs from then on is forwarded.
func TestEventsOff(t *testing.T) {
	env := newEnv(t)
	sim, srv := redfishBMC(t)
	sim.AddLogEntry("Warning", "Fan 2 below lower threshold")
	env.CreateReadyNode("quiet")
	env.CreateBMCSecret("quiet", bmcUser, bmcPassword)
	inv := framework.RedfishInventory("quiet", srv)
	inv.Spec.Events.Enabled = false
	env.CreateInventory(inv)
	env.Eventually(func() bool {
		return ready(env, "quiet") && node(t, env, "quiet").Labels[equinixv1.LabelManufacturer] == "Supermicro" &&
			env.Inventory("quiet").Status.MachinePowerState == "on"
	}, time.Minute, "the BMC was not read with events off")
	require.NoError(t, sim.SetHealth(bmcsim.PartFan, "Fan 2", bmcsim.HealthWarning))
	env.Eventually(func() bool { return hw(env, "quiet").Health == "Warning" }, time.Minute, "the health was not read")
	env.WaitPolls("quiet", 2)
	assert.Empty(t, forwarded(t, env, "quiet"), "an event was forwarded with events off")

	patchSpec(t, env, "quiet", map[string]any{"events": map[string]any{"enabled": true}})
	sim.AddLogEntry("Critical", "Fan 2 failed")
	env.Eventually(func() bool { return countHolding(messages(forwarded(t, env, "quiet")), "Fan 2 failed") == 1 }, time.Minute,
		"the entry logged after events were turned on was not forwarded")
	env.WaitPolls("quiet", 2)
	assert.Len(t, forwarded(t, env, "quiet"), 1, "what was logged while events were off is not forwarded later")
}
