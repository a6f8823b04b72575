package apivalidation

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
)

var inventoryGVR = schema.GroupVersionResource{Group: "metal.harvesterhci.io", Version: "v1alpha1", Resource: "inventories"}

// uiInventory is the Inventory Harvester's UI writes for a new host, field for
// field: harvester-ui-extension v1.8.0, pkg/harvester/edit/harvesterhci.io.host/HarvesterSeeder.vue
// (saveInventory: the two annotations) on the defaults of
// pkg/harvester/models/metal.harvesterhci.io.inventory.js (applyDefaults), with
// the form's host, port, Secret and events filled in.
const uiInventory = `apiVersion: metal.harvesterhci.io/v1alpha1
kind: Inventory
metadata:
  name: %s
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
      authSecretRef:
        namespace: bmc-secrets
        name: node-bmc
  events:
    enabled: true
    pollingInterval: 1h
  primaryDisk: ""
  managementInterfaceMacAddress: ""
`

func setupInventories(t *testing.T) (context.Context, dynamic.ResourceInterface) {
	t.Helper()
	c := shared.Require(t)
	ctx := context.Background()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	require.NoError(t, cluster.InstallCRDs(ctx, c.RESTConfig, cluster.InventoryCRDDir(root)))
	ensureNamespace(ctx, t, seederv1alpha1.InventoryNamespace)
	dyn, err := dynamic.NewForConfig(c.RESTConfig)
	require.NoError(t, err)
	return ctx, dyn.Resource(inventoryGVR).Namespace(seederv1alpha1.InventoryNamespace)
}

func parseObject(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &obj.Object))
	return obj
}

func createInventory(ctx context.Context, t *testing.T, inventories dynamic.ResourceInterface, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	t.Helper()
	created, err := inventories.Create(ctx, obj, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
	if err == nil {
		t.Cleanup(func() { _ = inventories.Delete(context.Background(), created.GetName(), metav1.DeleteOptions{}) })
	}
	return created, err
}

// TestUIInventoryAcceptedUnchanged: what the UI writes is valid, keeps every
// field, and comes back with the schema's defaults, as with Seeder's CRD.
func TestUIInventoryAcceptedUnchanged(t *testing.T) {
	ctx, inventories := setupInventories(t)
	created, err := createInventory(ctx, t, inventories, parseObject(t, fmt.Sprintf(uiInventory, "ui-node")))
	require.NoError(t, err)

	inv := &seederv1alpha1.Inventory{}
	require.NoError(t, fromUnstructured(created, inv))
	conn := inv.Spec.BaseboardManagementSpec.Connection
	assert.Equal(t, "172.16.1.1", conn.Host)
	assert.Equal(t, 623, conn.Port)
	assert.Equal(t, "bmc-secrets", conn.AuthSecretRef.Namespace)
	assert.Equal(t, "node-bmc", conn.AuthSecretRef.Name)
	assert.True(t, inv.Spec.Events.Enabled)
	assert.Equal(t, "1h", inv.Spec.Events.PollingInterval)
	assert.Equal(t, "amd64", inv.Spec.Arch, "the schema's default, as Seeder's")
	assert.Equal(t, "true", inv.Annotations[seederv1alpha1.AnnotationLocalInventory])
	assert.Equal(t, "ui-node", inv.Annotations[seederv1alpha1.AnnotationLocalNodeName])
	assert.Equal(t, []seederv1alpha1.Candidate{{Protocol: seederv1alpha1.ProtocolRedfish, Port: 443}, {Protocol: seederv1alpha1.ProtocolIPMI, Port: 623}},
		conn.Candidates(), "port 623 does not say the protocol: Redfish on 443, then IPMI")

	// Without port and events' optional fields, the schema fills them in.
	bare := parseObject(t, fmt.Sprintf(uiInventory, "bare-node"))
	unstructured.RemoveNestedField(bare.Object, "spec", "baseboardSpec", "connection", "port")
	unstructured.RemoveNestedField(bare.Object, "spec", "events", "pollingInterval")
	require.NoError(t, unstructured.SetNestedField(bare.Object, false, "spec", "events", "enabled"))
	created, err = createInventory(ctx, t, inventories, bare)
	require.NoError(t, err)
	port64, _, _ := unstructured.NestedInt64(created.Object, "spec", "baseboardSpec", "connection", "port")
	assert.Equal(t, int64(623), port64)
	interval, _, _ := unstructured.NestedString(created.Object, "spec", "events", "pollingInterval")
	assert.Equal(t, "1h", interval)
}

// TestInventoryStatusKeepsSeedersConditions: conditions as Seeder writes them
// (an empty reason, lastUpdateTime) and as the addon writes them
// (metav1.Condition, observedGeneration) are both kept by the status
// subresource, which Harvester's powerAction needs.
func TestInventoryStatusKeepsSeedersConditions(t *testing.T) {
	ctx, inventories := setupInventories(t)
	created, err := createInventory(ctx, t, inventories, parseObject(t, fmt.Sprintf(uiInventory, "status-node")))
	require.NoError(t, err)
	status := map[string]interface{}{
		"status": "inventoryNodeReady",
		"conditions": []interface{}{
			map[string]interface{}{"type": "bmcObjectCreated", "status": "True", "message": "bmc object created",
				"lastUpdateTime": "2026-01-02T03:04:05Z", "lastTransitionTime": "2026-01-02T03:04:05Z"},
			map[string]interface{}{"type": "machineNotContactable", "status": "False", "reason": ""},
			map[string]interface{}{"type": "Reachable", "status": "True", "reason": "BMCReachable", "message": "",
				"lastTransitionTime": "2026-01-02T03:04:05Z", "observedGeneration": int64(1)},
		},
		"powerAction":       map[string]interface{}{"lastJobName": ""},
		"machinePowerState": "on",
		"hardware":          map[string]interface{}{"health": "OK", "eventCursor": "sel:12", "observedGeneration": int64(1)},
	}
	require.NoError(t, unstructured.SetNestedField(created.Object, status, "status"))
	updated, err := inventories.UpdateStatus(ctx, created, metav1.UpdateOptions{FieldValidation: metav1.FieldValidationStrict})
	require.NoError(t, err)
	got, _, _ := unstructured.NestedMap(updated.Object, "status")
	assert.Equal(t, status, got)

	// Seeder's lastUpdateTime has no place in metav1.Condition: a typed
	// client reads past it, as Kubernetes clients read any unknown field.
	inv := &seederv1alpha1.Inventory{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(updated.Object, inv))
	assert.Equal(t, seederv1alpha1.InventoryNodeReady, inv.Status.Status)
	require.Len(t, inv.Status.Conditions, 3)
	assert.Equal(t, int64(1), inv.Status.Conditions[2].ObservedGeneration)
	require.NotNil(t, inv.Status.Hardware)
	assert.Equal(t, "sel:12", inv.Status.Hardware.EventCursor)

	rows := kubectlGet(t, "-n", seederv1alpha1.InventoryNamespace, "inventory", "status-node")
	require.Len(t, rows, 2)
	assert.Equal(t, []string{"NAME", "INVENTORYSTATUS", "GENERATEDPASSWORD", "ALLOCATEDNODEADDRESS", "POWER"}, rows[0],
		"Seeder's columns, then the power state")
	// Seeder's two provisioning columns stay empty: the addon writes neither.
	assert.Equal(t, []string{"status-node", "inventoryNodeReady", "on"}, rows[1])
}

// TestInventoryValidation: the checks the addon adds to Seeder's schema refuse
// what it could not use, and accept every value the UI can write.
func TestInventoryValidation(t *testing.T) {
	ctx, inventories := setupInventories(t)
	const pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	for i, tc := range []struct {
		name    string
		path    []string
		value   interface{}
		wantErr string
	}{
		{name: "a host name", path: []string{"connection", "host"}, value: "bmc-7.example.com"},
		{name: "an IPv6 address", path: []string{"connection", "host"}, value: "fd00::17"},
		{name: "Redfish on 443", path: []string{"connection", "port"}, value: int64(443)},
		{name: "the UI's intervals", path: []string{"events", "pollingInterval"}, value: "30m"},
		{name: "seconds", path: []string{"events", "pollingInterval"}, value: "90s"},
		{name: "a composite Go duration", path: []string{"events", "pollingInterval"}, value: "1h30m"},
		{name: "the ceiling", path: []string{"events", "pollingInterval"}, value: "24h"},
		{name: "a CA bundle", path: []string{"connection", "caBundle"}, value: pem},
		{name: "a chassis's system", path: []string{"connection", "systemID"}, value: "System.Embedded.2"},
		{name: "a slow BMC's timeout", path: []string{"connection", "timeout"}, value: "45s"},
		{name: "a system as a path", path: []string{"connection", "systemID"}, value: "/redfish/v1/Systems/2", wantErr: "systemID is a computer system's Id"},
		{name: "a timeout too short", path: []string{"connection", "timeout"}, value: "100ms", wantErr: "timeout must be between 1s and 2m"},
		{name: "a timeout too long", path: []string{"connection", "timeout"}, value: "10m", wantErr: "timeout must be between 1s and 2m"},
		{name: "a timeout in days", path: []string{"connection", "timeout"}, value: "1d", wantErr: "spec.baseboardSpec.connection.timeout in body should match"},
		{name: "host with a scheme", path: []string{"connection", "host"}, value: "https://10.0.0.1", wantErr: "host is a name or an IP address"},
		{name: "host with a port", path: []string{"connection", "host"}, value: "10.0.0.1:443", wantErr: "host is a name or an IP address"},
		{name: "empty host", path: []string{"connection", "host"}, value: "", wantErr: "spec.baseboardSpec.connection.host"},
		{name: "port 0", path: []string{"connection", "port"}, value: int64(0), wantErr: "spec.baseboardSpec.connection.port"},
		{name: "port past 65535", path: []string{"connection", "port"}, value: int64(70000), wantErr: "spec.baseboardSpec.connection.port"},
		{name: "days, a duration Go cannot parse", path: []string{"events", "pollingInterval"}, value: "1d", wantErr: "spec.events.pollingInterval in body should match"},
		{name: "words", path: []string{"events", "pollingInterval"}, value: "2 hours", wantErr: "spec.events.pollingInterval in body should match"},
		// The UI's validator is ^\d+[hms]$: whatever it takes is taken,
		// and the controller reads it within 1s to 24h.
		{name: "the UI's zero", path: []string{"events", "pollingInterval"}, value: "0s"},
		{name: "above the ceiling", path: []string{"events", "pollingInterval"}, value: "25h"},
		{name: "two days in hours", path: []string{"events", "pollingInterval"}, value: "48h"},
		{name: "past a Go duration", path: []string{"events", "pollingInterval"}, value: "99999999999999999999h"},
		{name: "below the floor", path: []string{"events", "pollingInterval"}, value: "500ms"},
		{name: "not a duration at all", path: []string{"events", "pollingInterval"}, value: "abc", wantErr: "pollingInterval"},
		{name: "a CA bundle without PEM", path: []string{"connection", "caBundle"}, value: "not a certificate", wantErr: "caBundle must hold PEM certificates"},
		{name: "redfish port 0", path: []string{"connection", "providerOptions", "redfish", "port"}, value: int64(0), wantErr: "providerOptions.redfish.port"},
		{name: "a power operation", path: []string{"powerActionRequested"}, value: "reboot"},
		{name: "an unknown power operation", path: []string{"powerActionRequested"}, value: "hibernate", wantErr: "spec.powerActionRequested"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := parseObject(t, fmt.Sprintf(uiInventory, fmt.Sprintf("validation-%d", i)))
			path := append([]string{"spec"}, tc.path...)
			if tc.path[0] == "connection" {
				path = append([]string{"spec", "baseboardSpec"}, tc.path...)
			}
			require.NoError(t, unstructured.SetNestedField(obj.Object, tc.value, path...))
			_, err := createInventory(ctx, t, inventories, obj)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}

	t.Run("caBundle with insecureTLS", func(t *testing.T) {
		obj := parseObject(t, fmt.Sprintf(uiInventory, "validation-both"))
		require.NoError(t, unstructured.SetNestedField(obj.Object, true, "spec", "baseboardSpec", "connection", "insecureTLS"))
		require.NoError(t, unstructured.SetNestedField(obj.Object, pem, "spec", "baseboardSpec", "connection", "caBundle"))
		_, err := createInventory(ctx, t, inventories, obj)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "set either caBundle or insecureTLS, not both")
	})
	t.Run("Seeder's required fields stay required", func(t *testing.T) {
		for _, field := range []string{"primaryDisk", "managementInterfaceMacAddress", "events", "baseboardSpec"} {
			obj := parseObject(t, fmt.Sprintf(uiInventory, "validation-required"))
			unstructured.RemoveNestedField(obj.Object, "spec", field)
			_, err := createInventory(ctx, t, inventories, obj)
			require.Error(t, err, field)
			assert.Contains(t, err.Error(), "spec."+field, field)
		}
	})
	t.Run("arch", func(t *testing.T) {
		obj := parseObject(t, fmt.Sprintf(uiInventory, "validation-arch"))
		require.NoError(t, unstructured.SetNestedField(obj.Object, "riscv64", "spec", "arch"))
		_, err := createInventory(ctx, t, inventories, obj)
		require.Error(t, err)
		assert.True(t, strings.Contains(err.Error(), "spec.arch"), err.Error())
	})
}
