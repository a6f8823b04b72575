package harvesterapi

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
)

var shared cluster.Shared

func TestMain(m *testing.M) {
	os.Exit(cluster.RunMain(m, cluster.Options{}, &shared))
}

var inventoryGVR = schema.GroupVersionResource{Group: "metal.harvesterhci.io", Version: "v1alpha1", Resource: "inventories"}

// uiInventory is what the UI's Out-of-Band Access writes for a node
// (harvester-ui-extension v1.8.0, edit/harvesterhci.io.host/HarvesterSeeder.vue).
const uiInventory = `apiVersion: metal.harvesterhci.io/v1alpha1
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
      host: 172.16.1.1
      port: 623
      insecureTLS: false
      authSecretRef: {namespace: bmc-secrets, name: %[1]s-bmc}
  events: {enabled: true, pollingInterval: 1h}
  primaryDisk: ""
  managementInterfaceMacAddress: ""
`

type world struct {
	c           *cluster.Cluster
	api         *Server
	k8s         kubernetes.Interface
	inventories dynamic.ResourceInterface
}

func setup(t *testing.T) (context.Context, *world) {
	c := shared.Require(t)
	Binary(t)
	ctx := context.Background()
	k8s, err := kubernetes.NewForConfig(c.RESTConfig)
	require.NoError(t, err)
	_, err = k8s.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: seederv1alpha1.InventoryNamespace}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	InstallCRDs(ctx, t, c)
	dyn, err := dynamic.NewForConfig(c.RESTConfig)
	require.NoError(t, err)
	return ctx, &world{c: c, api: Start(t, c), k8s: k8s, inventories: dyn.Resource(inventoryGVR).Namespace(seederv1alpha1.InventoryNamespace)}
}

func (w *world) node(ctx context.Context, t *testing.T, name string, annotations map[string]string) {
	t.Helper()
	_, err := w.k8s.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.k8s.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

func (w *world) createInventory(ctx context.Context, t *testing.T, node string) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(fmt.Sprintf(uiInventory, node)), &obj.Object))
	_, err := w.inventories.Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.inventories.Delete(context.Background(), node, metav1.DeleteOptions{}) })
}

// setStatus writes fields of the Inventory's status as a controller would,
// through the status subresource; a nil value removes the field.
func (w *world) setStatus(ctx context.Context, t *testing.T, node string, fields map[string]interface{}) {
	t.Helper()
	inv, err := w.inventories.Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	for path, value := range fields {
		keys := append([]string{"status"}, splitPath(path)...)
		if value == nil {
			unstructured.RemoveNestedField(inv.Object, keys...)
			continue
		}
		require.NoError(t, unstructured.SetNestedField(inv.Object, value, keys...))
	}
	_, err = w.inventories.UpdateStatus(ctx, inv, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func splitPath(path string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(path); i++ {
		if i == len(path) || path[i] == '.' {
			out = append(out, path[start:i])
			start = i + 1
		}
	}
	return out
}

// answers polls until the call answers want (the handler reads the Addon
// from a cache, which follows a change within moments) and returns it.
func answers(t *testing.T, want int, call func() (Response, error)) Response {
	t.Helper()
	var last Response
	require.Eventually(t, func() bool {
		r, err := call()
		require.NoError(t, err)
		last = r
		return r.Status == want
	}, 30*time.Second, 100*time.Millisecond, "want %d", want)
	return last
}

// TestPowerActionPossible replays Harvester's check before a power action
// (pkg/api/node formatter.go powerActionPossible) against hand-written
// Inventories: no Addon, a disabled one, no Inventory, an Inventory without
// status or not ready, and a ready one.
func TestPowerActionPossible(t *testing.T) {
	ctx, w := setup(t)
	const node = "possible-node"
	w.node(ctx, t, node, nil)
	possible := func() (Response, error) { return w.api.PowerActionPossible(ctx, node) }

	RemoveSeederAddon(ctx, t, w.c)
	answers(t, http.StatusFailedDependency, possible)

	SetSeederAddon(ctx, t, w.c, false)
	t.Cleanup(func() { RemoveSeederAddon(context.Background(), t, w.c) })
	// Disabled: still 424. The enabled Addon below turns it into another
	// answer, which proves this one came from the Addon's state.
	answers(t, http.StatusFailedDependency, possible)

	SetSeederAddon(ctx, t, w.c, true)
	// Enabled, but no Inventory named after the node.
	r := answers(t, http.StatusFailedDependency, possible)
	t.Logf("no Inventory: %s", r)

	w.createInventory(ctx, t, node)
	r = answers(t, http.StatusConflict, possible)
	assert.Contains(t, r.Body, "no field .status.status present in inventory object: "+node)

	w.setStatus(ctx, t, node, map[string]interface{}{"status": "bmcUnreachable"})
	r = answers(t, http.StatusConflict, possible)
	assert.Contains(t, r.Body, "expected to find inventory "+node+" status inventoryNodeReady, but current status is: bmcUnreachable")

	w.setStatus(ctx, t, node, map[string]interface{}{"status": string(seederv1alpha1.InventoryNodeReady)})
	answers(t, http.StatusNoContent, possible)

	SetSeederAddon(ctx, t, w.c, false)
	answers(t, http.StatusFailedDependency, possible)

	r, err := w.api.PowerActionPossible(ctx, "no-such-node")
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotFound, r.Status, r.String())
}

// TestPowerAction replays Harvester's power request (formatter.go
// powerAction): it writes spec.powerActionRequested and clears
// status.powerAction.lastJobName, refuses a new request while actionStatus is
// absent, and accepts one again once it is complete or failed.
func TestPowerAction(t *testing.T) {
	ctx, w := setup(t)
	const node = "action-node"
	w.node(ctx, t, node, nil)
	w.createInventory(ctx, t, node)
	w.setStatus(ctx, t, node, map[string]interface{}{"status": string(seederv1alpha1.InventoryNodeReady)})

	// The handler finds the node in its cache, which has it within moments;
	// until then it answers 404 and writes nothing.
	answers(t, http.StatusNoContent, func() (Response, error) { return w.api.PowerAction(ctx, node, seederv1alpha1.PowerOperationReboot) })
	inv, err := w.inventories.Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	requested, _, _ := unstructured.NestedString(inv.Object, "spec", "powerActionRequested")
	assert.Equal(t, seederv1alpha1.PowerOperationReboot, requested)
	powerAction, found, _ := unstructured.NestedMap(inv.Object, "status", "powerAction")
	require.True(t, found)
	assert.Equal(t, map[string]interface{}{"lastJobName": ""}, powerAction, "the new request's signal: no job, no actionStatus")

	// Pending: no actionStatus yet.
	r, err := w.api.PowerAction(ctx, node, seederv1alpha1.PowerOperationShutdown)
	require.NoError(t, err)
	assert.Equal(t, http.StatusInternalServerError, r.Status, r.String())
	assert.Contains(t, r.Body, "waiting for power action status for action reboot for node "+node+" to be populated")
	// A controller that took the request and left actionStatus empty: still pending.
	w.setStatus(ctx, t, node, map[string]interface{}{"powerAction.lastJobName": "job-1", "powerAction.actionStatus": ""})
	r, err = w.api.PowerAction(ctx, node, seederv1alpha1.PowerOperationShutdown)
	require.NoError(t, err)
	assert.Equal(t, http.StatusInternalServerError, r.Status, r.String())

	// Ended: the next request is accepted, and Harvester keeps the old
	// outcome beside it until a controller takes the new one.
	w.setStatus(ctx, t, node, map[string]interface{}{"powerAction.actionStatus": seederv1alpha1.ActionStatusComplete,
		"powerAction.lastActionRequested": seederv1alpha1.PowerOperationReboot})
	r, err = w.api.PowerAction(ctx, node, seederv1alpha1.PowerOperationShutdown)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, r.Status, r.String())
	inv, err = w.inventories.Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	requested, _, _ = unstructured.NestedString(inv.Object, "spec", "powerActionRequested")
	assert.Equal(t, seederv1alpha1.PowerOperationShutdown, requested)
	powerAction, _, _ = unstructured.NestedMap(inv.Object, "status", "powerAction")
	assert.Equal(t, map[string]interface{}{"lastJobName": "", "actionStatus": seederv1alpha1.ActionStatusComplete,
		"lastActionRequested": seederv1alpha1.PowerOperationReboot}, powerAction)

	// A failed request unblocks too.
	w.setStatus(ctx, t, node, map[string]interface{}{"powerAction.actionStatus": nil, "powerAction.lastJobName": "job-2"})
	r, err = w.api.PowerAction(ctx, node, seederv1alpha1.PowerOperationPowerOn)
	require.NoError(t, err)
	assert.Equal(t, http.StatusInternalServerError, r.Status, r.String())
	w.setStatus(ctx, t, node, map[string]interface{}{"powerAction.actionStatus": seederv1alpha1.ActionStatusFailed})
	r, err = w.api.PowerAction(ctx, node, seederv1alpha1.PowerOperationPowerOn)
	require.NoError(t, err)
	assert.Equal(t, http.StatusNoContent, r.Status, r.String())

	r, err = w.api.PowerAction(ctx, node, "hibernate")
	require.NoError(t, err)
	assert.Equal(t, http.StatusInternalServerError, r.Status, "not an operation: %s", r)
	r, err = w.api.PowerAction(ctx, "no-inventory-node", seederv1alpha1.PowerOperationReboot)
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotFound, r.Status, r.String())
}

// TestNodeOffersPowerActionInMaintenance: the UI shows the power menu only
// when the node offers powerAction, which Harvester does only while the node
// is in maintenance mode (annotation harvesterhci.io/maintain-status). The
// handler itself does not check it: the addon must.
func TestNodeOffersPowerActionInMaintenance(t *testing.T) {
	ctx, w := setup(t)
	w.node(ctx, t, "plain-node", nil)
	w.node(ctx, t, "maintained-node", map[string]string{"harvesterhci.io/maintain-status": "completed"})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		plain, err := w.api.NodeActions(ctx, "plain-node")
		require.NoError(c, err)
		assert.Contains(c, plain, "powerActionPossible")
		assert.NotContains(c, plain, "powerAction")
		assert.Contains(c, plain, "enableMaintenanceMode")
		maintained, err := w.api.NodeActions(ctx, "maintained-node")
		require.NoError(c, err)
		assert.Contains(c, maintained, "powerAction")
		assert.Contains(c, maintained, "disableMaintenanceMode")
	}, 30*time.Second, 100*time.Millisecond)
}
