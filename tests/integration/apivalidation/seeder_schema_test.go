package apivalidation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
)

// seederFields is Seeder's Inventory schema (harvester/seeder v1.8.0,
// chart/seeder-crd/templates/metal.harvesterhci.io_inventories.yaml, the same
// at later commits): every property path with its type, and its default or
// format where it has one. The addon's CRD must have each with the same
// type, default and format, so that whatever Seeder, the UI or Harvester's
// node actions write means the same under either CRD.
var seederFields = map[string]string{
	"spec":                          "object",
	"spec.arch":                     "string default=\"amd64\"",
	"spec.baseboardSpec":            "object",
	"spec.baseboardSpec.connection": "object",
	"spec.baseboardSpec.connection.authSecretRef":                                            "object",
	"spec.baseboardSpec.connection.authSecretRef.name":                                       "string",
	"spec.baseboardSpec.connection.authSecretRef.namespace":                                  "string",
	"spec.baseboardSpec.connection.host":                                                     "string",
	"spec.baseboardSpec.connection.insecureTLS":                                              "boolean",
	"spec.baseboardSpec.connection.port":                                                     "integer default=623",
	"spec.baseboardSpec.connection.providerOptions":                                          "object",
	"spec.baseboardSpec.connection.providerOptions.intelAMT":                                 "object",
	"spec.baseboardSpec.connection.providerOptions.intelAMT.port":                            "integer",
	"spec.baseboardSpec.connection.providerOptions.ipmitool":                                 "object",
	"spec.baseboardSpec.connection.providerOptions.ipmitool.cipherSuite":                     "string",
	"spec.baseboardSpec.connection.providerOptions.ipmitool.port":                            "integer",
	"spec.baseboardSpec.connection.providerOptions.redfish":                                  "object",
	"spec.baseboardSpec.connection.providerOptions.redfish.port":                             "integer",
	"spec.baseboardSpec.connection.providerOptions.rpc":                                      "object",
	"spec.baseboardSpec.connection.providerOptions.rpc.consumerURL":                          "string",
	"spec.baseboardSpec.connection.providerOptions.rpc.experimental":                         "object",
	"spec.baseboardSpec.connection.providerOptions.rpc.experimental.customRequestPayload":    "string",
	"spec.baseboardSpec.connection.providerOptions.rpc.experimental.dotPath":                 "string",
	"spec.baseboardSpec.connection.providerOptions.rpc.hmac":                                 "object",
	"spec.baseboardSpec.connection.providerOptions.rpc.hmac.prefixSigDisabled":               "boolean",
	"spec.baseboardSpec.connection.providerOptions.rpc.hmac.secrets":                         "object",
	"spec.baseboardSpec.connection.providerOptions.rpc.logNotificationsDisabled":             "boolean",
	"spec.baseboardSpec.connection.providerOptions.rpc.request":                              "object",
	"spec.baseboardSpec.connection.providerOptions.rpc.request.httpContentType":              "string",
	"spec.baseboardSpec.connection.providerOptions.rpc.request.httpMethod":                   "string",
	"spec.baseboardSpec.connection.providerOptions.rpc.request.staticHeaders":                "object",
	"spec.baseboardSpec.connection.providerOptions.rpc.request.timestampFormat":              "string",
	"spec.baseboardSpec.connection.providerOptions.rpc.request.timestampHeader":              "string",
	"spec.baseboardSpec.connection.providerOptions.rpc.signature":                            "object",
	"spec.baseboardSpec.connection.providerOptions.rpc.signature.appendAlgoToHeaderDisabled": "boolean",
	"spec.baseboardSpec.connection.providerOptions.rpc.signature.headerName":                 "string",
	"spec.baseboardSpec.connection.providerOptions.rpc.signature.includedPayloadHeaders":     "array",
	"spec.events":         "object",
	"spec.events.enabled": "boolean default=false",
	// Seeder's has format duration too, which refuses a number of hours
	// past int64 that the UI's validator (^\d+[hms]$) passes: the one
	// check left out, so that every value the UI saves is stored (and read
	// within 1s..24h).
	"spec.events.pollingInterval":            "string default=\"1h\"",
	"spec.managementInterfaceMacAddress":     "string",
	"spec.powerActionRequested":              "string",
	"spec.primaryDisk":                       "string",
	"status":                                 "object",
	"status.conditions":                      "array",
	"status.conditions[].lastTransitionTime": "string",
	"status.conditions[].lastUpdateTime":     "string",
	"status.conditions[].message":            "string",
	"status.conditions[].reason":             "string",
	"status.conditions[].status":             "string",
	"status.conditions[].type":               "string",
	"status.generatedPassword":               "string",
	"status.hardwareID":                      "string",
	"status.machinePowerState":               "string",
	"status.ownerCluster":                    "object",
	"status.ownerCluster.name":               "string",
	"status.ownerCluster.namespace":          "string",
	"status.powerAction":                     "object",
	"status.powerAction.actionStatus":        "string",
	"status.powerAction.lastActionRequested": "string",
	"status.powerAction.lastJobName":         "string",
	"status.pxeBootConfig":                   "object",
	"status.pxeBootConfig.address":           "string",
	"status.pxeBootConfig.gateway":           "string",
	"status.pxeBootConfig.nameServers":       "array",
	"status.pxeBootConfig.netmask":           "string",
	"status.status":                          "string",
}

// seederRequired is every required list of Seeder's schema.
var seederRequired = map[string][]string{
	"spec":                          {"baseboardSpec", "events", "managementInterfaceMacAddress", "primaryDisk"},
	"spec.baseboardSpec":            {"connection"},
	"spec.baseboardSpec.connection": {"host", "insecureTLS"},
	"spec.events":                   {"enabled"},
	"spec.baseboardSpec.connection.providerOptions.intelAMT": {"port"},
	"spec.baseboardSpec.connection.providerOptions.redfish":  {"port"},
	"spec.baseboardSpec.connection.providerOptions.rpc":      {"consumerURL"},
	"status.conditions[]": {"status", "type"},
	"status.ownerCluster": {"name", "namespace"},
}

func readInventoryCRD(t *testing.T) *apiextv1.CustomResourceDefinition {
	t.Helper()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(cluster.InventoryCRDDir(root), "metal.harvesterhci.io_inventories.yaml"))
	require.NoError(t, err)
	crd := &apiextv1.CustomResourceDefinition{}
	require.NoError(t, yaml.UnmarshalStrict(raw, crd))
	return crd
}

// schemaAt walks a dotted path; "x[]" is the items of array x.
func schemaAt(root *apiextv1.JSONSchemaProps, path string) *apiextv1.JSONSchemaProps {
	cur := root
	for _, part := range strings.Split(path, ".") {
		name, items := strings.CutSuffix(part, "[]")
		next, ok := cur.Properties[name]
		if !ok {
			return nil
		}
		cur = &next
		if items {
			if cur.Items == nil || cur.Items.Schema == nil {
				return nil
			}
			cur = cur.Items.Schema
		}
	}
	return cur
}

func describe(s *apiextv1.JSONSchemaProps) string {
	out := s.Type
	if s.Default != nil {
		out += " default=" + string(s.Default.Raw)
	}
	if s.Format != "" {
		out += " format=" + s.Format
	}
	return out
}

// TestInventoryCRDKeepsSeedersSchema: the addon's Inventory CRD is Seeder's,
// field for field, with only optional additions.
func TestInventoryCRDKeepsSeedersSchema(t *testing.T) {
	crd := readInventoryCRD(t)
	assert.Equal(t, "inventories.metal.harvesterhci.io", crd.Name)
	assert.Equal(t, "metal.harvesterhci.io", crd.Spec.Group)
	assert.Equal(t, apiextv1.CustomResourceDefinitionNames{Kind: "Inventory", ListKind: "InventoryList", Plural: "inventories", Singular: "inventory"}, crd.Spec.Names)
	assert.Equal(t, apiextv1.NamespaceScoped, crd.Spec.Scope)
	require.Len(t, crd.Spec.Versions, 1)
	v := crd.Spec.Versions[0]
	assert.Equal(t, "v1alpha1", v.Name)
	assert.True(t, v.Served)
	assert.True(t, v.Storage)
	require.NotNil(t, v.Subresources, "Harvester's powerAction writes status through the status subresource")
	assert.NotNil(t, v.Subresources.Status)
	require.GreaterOrEqual(t, len(v.AdditionalPrinterColumns), 3)
	assert.Equal(t, []apiextv1.CustomResourceColumnDefinition{
		{Name: "InventoryStatus", Type: "string", JSONPath: ".status.status"},
		{Name: "GeneratedPassword", Type: "string", JSONPath: ".status.generatedPassword"},
		{Name: "AllocatedNodeAddress", Type: "string", JSONPath: ".status.pxeBootConfig.address"},
	}, v.AdditionalPrinterColumns[:3], "Seeder's columns, which steve shows in the UI's lists")

	schema := v.Schema.OpenAPIV3Schema
	assert.Empty(t, schema.Required, "neither spec nor status is required, as in Seeder's")
	for path, want := range seederFields {
		got := schemaAt(schema, path)
		if !assert.NotNil(t, got, "Seeder's %s is missing", path) {
			continue
		}
		assert.Equal(t, want, describe(got), path)
		assert.False(t, got.XPreserveUnknownFields != nil && *got.XPreserveUnknownFields, "%s keeps unknown fields", path)
	}
	// Required lists of Seeder's objects: Seeder's exactly, so that an
	// addition is never required. (Inside an addition, such as
	// status.hardware, anything goes.)
	var walk func(path string, s *apiextv1.JSONSchemaProps)
	walk = func(path string, s *apiextv1.JSONSchemaProps) {
		if _, seeders := seederFields[path]; path != "" && !seeders && !strings.HasSuffix(path, "[]") {
			return
		}
		if path != "" {
			assert.ElementsMatch(t, seederRequired[path], s.Required, "required of %s", path)
		}
		for name, p := range s.Properties {
			child := strings.TrimPrefix(path+"."+name, ".")
			if path == "" && name != "spec" && name != "status" {
				continue
			}
			if p.Items != nil && p.Items.Schema != nil {
				walk(child+"[]", p.Items.Schema)
			}
			walk(child, &p)
		}
	}
	walk("", schema)
}
