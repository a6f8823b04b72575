package inventory

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
)

// uiInventoryYAML is the Inventory Harvester's UI writes when a user saves a
// host's Out-of-Band Access for the first time, field for field
// (harvester-ui-extension v1.8.0: pkg/harvester/edit/harvesterhci.io.host/HarvesterSeeder.vue,
// saveInventory, adds the two annotations to the object
// pkg/harvester/models/metal.harvesterhci.io.inventory.js applyDefaults
// built, whose host, port, insecureTLS, Secret and events the form fills).
// The port is a JSON number (v-model.number); the Secret is split from the
// picker's "<namespace>/<name>". extra is appended under connection.
const uiInventoryYAML = `apiVersion: metal.harvesterhci.io/v1alpha1
kind: Inventory
metadata:
  name: %[1]s
  namespace: harvester-system
  annotations:
    metal.harvesterhci.io/local-node-name: %[1]s
    metal.harvesterhci.io/local-inventory: "true"
spec:
  baseboardSpec:
    connection:
      authSecretRef:
        namespace: %[2]s
        name: %[1]s
      insecureTLS: %[5]t
      host: %[3]s
      port: %[4]d
%[6]s  events:
    enabled: true
    pollingInterval: %[7]s
  primaryDisk: ""
  managementInterfaceMacAddress: ""
`

var inventoryGVR = schema.GroupVersionResource{Group: "metal.harvesterhci.io", Version: "v1alpha1", Resource: "inventories"}

// createUIInventory applies the UI's object unchanged, through the dynamic
// client as steve would.
func createUIInventory(t *testing.T, env *framework.Env, node, host string, port int, insecureTLS bool, extra string) {
	t.Helper()
	createUIInventoryEvery(t, env, node, host, port, insecureTLS, extra, framework.InventoryPollEvery)
}

// createUIInventoryEvery is createUIInventory with the form's polling
// interval.
func createUIInventoryEvery(t *testing.T, env *framework.Env, node, host string, port int, insecureTLS bool, extra, interval string) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	doc := fmt.Sprintf(uiInventoryYAML, node, framework.BMCSecretNamespace, host, port, insecureTLS, extra, interval)
	require.NoError(t, yaml.Unmarshal([]byte(doc), &obj.Object))
	dyn, err := dynamic.NewForConfig(env.Cluster.RESTConfig)
	require.NoError(t, err)
	inventories := dyn.Resource(inventoryGVR).Namespace(ns)
	_, err = inventories.Create(env.Ctx, obj, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
	require.NoError(t, err)
	t.Cleanup(func() { _ = inventories.Delete(env.Ctx, node, metav1.DeleteOptions{}) })
}

// The UI's Inventory, against the Redfish responder: the Secret in another
// namespace, unlabelled; the Inventory with the two annotations and the
// form's fields, nothing else (the UI has no CA field, so the user ticks
// insecureTLS for the BMC's self-signed certificate). It reaches
// inventoryNodeReady, the node gets the labels the UI's host page reads,
// the power state shows, and each event log entry becomes one Event.
func TestUIInventoryRedfish(t *testing.T) {
	env := newEnv(t)
	sim, srv := redfishBMC(t)
	sim.AddLogEntry("Warning", "Correctable ECC error on DIMM A1")
	env.CreateReadyNode("ui-rf")
	env.CreateBMCSecret("ui-rf", bmcUser, bmcPassword)
	createUIInventory(t, env, "ui-rf", srv.Host, srv.Port, true, "")

	env.Eventually(func() bool { return ready(env, "ui-rf") }, time.Minute, "the UI's Inventory never became inventoryNodeReady")
	env.Eventually(func() bool {
		n := node(t, env, "ui-rf")
		return n.Labels[equinixv1.LabelManufacturer] == "Supermicro" && n.Labels[equinixv1.LabelModel] == "SYS-510P-M" &&
			n.Labels[equinixv1.LabelSerialNumber] == "S123456X1234567"
	}, time.Minute, "the node did not get the labels the UI reads")
	inv := env.Inventory("ui-rf")
	assert.Equal(t, "on", inv.Status.MachinePowerState)
	assert.True(t, hasCondition(env, "ui-rf", equinixv1.ConditionStalled, metav1.ConditionFalse, equinixv1.ReasonInventoryReady))
	env.Eventually(func() bool {
		return countHolding(messages(forwarded(t, env, "ui-rf")), "Correctable ECC error on DIMM A1") == 1
	}, time.Minute, "the event log entry was not forwarded")
	sim.AddLogEntry("Critical", "Power supply PSU 2 failed")
	env.Eventually(func() bool {
		return countHolding(messages(forwarded(t, env, "ui-rf")), "Power supply PSU 2 failed") == 1
	}, time.Minute, "the new entry was not forwarded")
	env.WaitPolls("ui-rf", 3)
	fw := forwarded(t, env, "ui-rf")
	for id, msgs := range fw {
		assert.Len(t, msgs, 1, "machine event %s forwarded more than once: %v", id, msgs)
	}
	assert.Len(t, fw, 2, "one Event per entry: %v", fw)
	env.AssertAbsent(bmcPassword)
}

// The UI's Inventory against OpenIPMI's ipmi_sim. The UI's port is 623,
// IPMI's, which ipmi_sim cannot take in the tests; the test adds
// providerOptions.ipmitool.port, the one field the UI does not write, to say
// where it listens (the port rule: 623 means IPMI; ipmitool chooses IPMI on
// its own port). Without ipmi_sim the test is skipped, and fails under
// CI=true, where scripts/bmc-tools installs it.
func TestUIInventoryIPMI(t *testing.T) {
	sim := ipmisim.Require(t, ipmisim.Options{Username: bmcUser, Password: ipmiPassword,
		Manufacturer: "Dell Inc.", Model: "PowerEdge R650", SerialNumber: "7XJ2KQ3"})
	env := newEnv(t)
	env.CreateReadyNode("ui-ipmi")
	env.CreateBMCSecret("ui-ipmi", bmcUser, ipmiPassword)
	extra := fmt.Sprintf("      providerOptions:\n        ipmitool:\n          port: %d\n", sim.Port)
	createUIInventory(t, env, "ui-ipmi", sim.Host, seederv1alpha1.IPMIPort, false, extra)

	env.Eventually(func() bool { return ready(env, "ui-ipmi") }, time.Minute, "the UI's Inventory never became inventoryNodeReady")
	env.Eventually(func() bool {
		n := node(t, env, "ui-ipmi")
		return n.Labels[equinixv1.LabelManufacturer] == "DellInc" && n.Labels[equinixv1.LabelModel] == "PowerEdgeR650" &&
			n.Labels[equinixv1.LabelSerialNumber] == "7XJ2KQ3"
	}, time.Minute, "the node did not get the labels the UI reads")
	assert.Equal(t, "on", env.Inventory("ui-ipmi").Status.MachinePowerState)
	_, err := sim.AddSEL(0x0c, ipmisim.SensorDIMM, 0x6f, 0x00, 1, 0)
	require.NoError(t, err)
	env.Eventually(func() bool { return countHolding(messages(forwarded(t, env, "ui-ipmi")), "Memory") == 1 }, time.Minute,
		"the SEL entry was not forwarded")
	env.WaitPolls("ui-ipmi", 3)
	for id, msgs := range forwarded(t, env, "ui-ipmi") {
		assert.Len(t, msgs, 1, "machine event %s forwarded more than once: %v", id, msgs)
	}
	env.AssertAbsent(ipmiPassword)
}
