package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/harvestercluster"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// The node of the BMC demo: a server installed by hand, and its BMC's
// credentials.
const (
	bmcNode         = "harvester-node-7"
	bmcUsername     = "admin"
	bmcPassword     = "demo-bmc-pw-7"
	bmcSecretsSpace = "bmc-secrets"
)

// inventoryAsTheUIWrites is the Inventory Harvester's UI writes for a host
// (Hosts > Edit Config > Out-of-Band Access): its form has no CA field, so
// Insecure TLS is ticked. %[1]s is the node, %[2]s and %[3]d the BMC's
// address.
const inventoryAsTheUIWrites = `apiVersion: metal.harvesterhci.io/v1alpha1
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
        namespace: ` + bmcSecretsSpace + `
        name: %[1]s-bmc
      insecureTLS: true
      host: %[2]s
      port: %[3]d
  events:
    enabled: true
    pollingInterval: 5s
  primaryDisk: ""
  managementInterfaceMacAddress: ""
`

// bmcDemo maps a node the addon did not provision to a simulated Redfish
// BMC with the Secret and Inventory Harvester's UI writes, served by the
// controller started a second time in the seeder mode (the
// harvester-seeder Addon's install): its facts, a forwarded event, and a
// reboot asked as Harvester's node action asks it, refused outside
// maintenance mode and then sent as one command.
func bmcDemo(ctx context.Context, d *demoRun) error {
	say("starting the controller a second time, in the seeder mode: the harvester-seeder Addon's install")
	httpAddr, err := cluster.FreeAddr()
	if err != nil {
		return err
	}
	seeder, err := start(d.dir, d.detached, "seeder", d.controllerBinary(), "--mode", config.ModeSeeder,
		"--kubeconfig", d.kubeconfig, "--http-address", httpAddr,
		"--leader-lock-name", "harvester-seeder-hardware", "--poll-interval", "1s")
	if err != nil {
		return err
	}
	if err := seeder.waitReady(ctx, "http://"+httpAddr+"/readyz"); err != nil {
		return err
	}

	say("starting a simulated Redfish BMC (self-signed TLS, sessions, a system event log)")
	hardware := bmcsim.DefaultHardware()
	bmc := bmcsim.New(bmcsim.Options{Username: bmcUsername, Password: bmcPassword, Hardware: &hardware})
	srv, err := bmcsim.NewServer(bmc, "")
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintf(os.Stderr, "    Redfish BMC at %s\n", srv.URL)

	say("node %s: a server installed by hand, whose kubelet registered it", bmcNode)
	if _, err := d.kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: bmcNode}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := d.nodeReady(ctx); err != nil {
		return err
	}

	say("what Harvester's UI writes (Hosts > %s > Edit Config > Out-of-Band Access): a Secret in a namespace of the user's, no label", bmcNode)
	if _, err := d.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bmcSecretsSpace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	secret := harvestercluster.BMCSecret(bmcSecretsSpace, bmcNode+"-bmc", bmcUsername, bmcPassword)
	if _, err := d.kube.CoreV1().Secrets(bmcSecretsSpace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return err
	}
	say("... and the Inventory, named after the node, in harvester-system (the form has no CA field: Insecure TLS is ticked)")
	inventory := fmt.Sprintf(inventoryAsTheUIWrites, bmcNode, srv.Host, srv.Port)
	fmt.Print(inventory)
	path := filepath.Join(d.dir, "inventory.yaml")
	if err := os.WriteFile(path, []byte(inventory), 0o600); err != nil {
		return err
	}
	if err := d.kubectl(ctx, nil, "apply", "-f", path); err != nil {
		return err
	}
	if err := d.waitJSONPath(ctx, time.Minute, "the Inventory did not become inventoryNodeReady", "inventoryNodeReady",
		"inventory", "-n", namespace, bmcNode, "-o", "jsonpath={.status.status}"); err != nil {
		return err
	}

	say("facts: the labels the Harvester UI's host page reads, and the specs as annotations")
	if err := d.waitJSONPath(ctx, time.Minute, "the node did not get its labels", hardware.SerialNumber,
		"node", bmcNode, "-o", "jsonpath={.metadata.labels}"); err != nil {
		return err
	}
	if err := d.show(ctx, "INVENTORYSTATUS: what Harvester's power actions require", "-n", namespace, "get", "inventory"); err != nil {
		return err
	}
	if err := d.show(ctx, "", "get", "node", bmcNode, "-L", "manufacturer,model,serialNumber"); err != nil {
		return err
	}
	if err := d.showAnnotations(ctx, "equinix.harvesterhci.io/"); err != nil {
		return err
	}

	say("an event: the BMC logs an ECC error and a power supply fails")
	bmc.AddLogEntry("Warning", "Correctable ECC error on DIMM A1")
	if err := bmc.SetHealth(bmcsim.PartPowerSupply, "PSU 2", "Critical"); err != nil {
		return err
	}
	if err := d.waitJSONPath(ctx, time.Minute, "the power supply's failure was not forwarded", "PowerSupplies is Critical",
		"events", "-A", "--field-selector", "involvedObject.name="+bmcNode, "-o", "jsonpath={.items[*].message}"); err != nil {
		return err
	}
	if err := d.show(ctx, "each forwarded once", "get", "events", "-A", "--field-selector", "involvedObject.name="+bmcNode,
		"-o", "custom-columns=TYPE:.type,REASON:.reason,MESSAGE:.message"); err != nil {
		return err
	}

	say("Reboot from the host's menu outside maintenance mode (Harvester's API does not check it; the addon does): nothing is sent")
	if err := harvestercluster.RequestPowerAction(ctx, d.rest, bmcNode, "reboot"); err != nil {
		return err
	}
	if err := d.waitJSONPath(ctx, 30*time.Second, "the reboot was not refused", "failed",
		"inventory", "-n", namespace, bmcNode, "-o", "jsonpath={.status.powerAction.actionStatus}"); err != nil {
		return err
	}
	why, err := d.jsonPath(ctx, "inventory", "-n", namespace, bmcNode, "-o", "jsonpath={.status.hardware.lastPowerAction.message}")
	if err != nil {
		return err
	}
	fmt.Printf("    %s\n    resets the BMC received so far: %q\n", why, bmc.Resets())

	say("Enable Maintenance Mode (the simulator plays Harvester and drains the node), then Reboot again")
	drain := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, harvester.AnnotationDrainRequested)
	if _, err := d.kube.CoreV1().Nodes().Patch(ctx, bmcNode, types.MergePatchType, []byte(drain), metav1.PatchOptions{}); err != nil {
		return err
	}
	if err := d.waitJSONPath(ctx, time.Minute, "the node did not enter maintenance mode", string(harvester.MaintenanceCompleted),
		"node", bmcNode, "-o", "jsonpath={.metadata.annotations}"); err != nil {
		return err
	}
	if err := harvestercluster.RequestPowerAction(ctx, d.rest, bmcNode, "reboot"); err != nil {
		return err
	}
	err = waitFor(ctx, time.Minute, 500*time.Millisecond, "the power cycle was not sent", func() error {
		if !slices.Contains(bmc.Resets(), "PowerCycle") {
			return errNotYet
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := d.waitJSONPath(ctx, time.Minute, "the reboot did not complete", "complete",
		"inventory", "-n", namespace, bmcNode, "-o", "jsonpath={.status.powerAction.actionStatus}"); err != nil {
		return err
	}
	say("the server power-cycled; its kubelet reports Ready again")
	if err := d.nodeReady(ctx); err != nil {
		return err
	}
	if err := d.show(ctx, "what the UI reads", "-n", namespace, "get", "inventory", bmcNode, "-o", "jsonpath={.status.powerAction}{\"\\n\"}"); err != nil {
		return err
	}
	d.note("resets the BMC received: %q   # one command for the one request sent", bmc.Resets())
	return nil
}

// nodeReady reports the demo's node Ready as its kubelet would, again
// after a conflict with the controllers' writes of the node.
func (d *demoRun) nodeReady(ctx context.Context) error {
	return waitFor(ctx, 10*time.Second, 100*time.Millisecond, "node "+bmcNode+" not reported Ready", func() error {
		err := harvestercluster.WriteNodeReady(ctx, d.kube, bmcNode, true)
		if apierrors.IsConflict(err) {
			return errNotYet
		}
		return err
	})
}

// jsonPath is the output of `kubectl get args...` (args ending in -o
// jsonpath=...).
func (d *demoRun) jsonPath(ctx context.Context, args ...string) (string, error) {
	return d.kubectlOutput(ctx, append([]string{"get"}, args...)...)
}

// waitJSONPath waits until `kubectl get args...` prints text.
func (d *demoRun) waitJSONPath(ctx context.Context, timeout time.Duration, what, text string, args ...string) error {
	return waitFor(ctx, timeout, 500*time.Millisecond, what, func() error {
		out, err := d.jsonPath(ctx, args...)
		if err != nil || !strings.Contains(out, text) {
			return errNotYet
		}
		return nil
	})
}

// showAnnotations shows the node's annotations under prefix, as the
// lines of its YAML a grep would find.
func (d *demoRun) showAnnotations(ctx context.Context, prefix string) error {
	var out strings.Builder
	if err := d.kubectl(ctx, &out, "get", "node", bmcNode, "-o", "yaml"); err != nil {
		return err
	}
	d.note("$ kubectl get node %s -o yaml | grep %s   # the specs", bmcNode, prefix)
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, prefix) {
			d.note("%s", line)
		}
	}
	return nil
}
