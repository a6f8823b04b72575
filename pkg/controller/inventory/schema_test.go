package inventory

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
)

// Seeder v1.8.0's Inventory CRD lacks exactly the addon's additions; the
// addon's own CRD lacks nothing.
func TestMissingFields(t *testing.T) {
	want := &apiextv1.CustomResourceDefinition{}
	require.NoError(t, yaml.UnmarshalStrict(seederv1alpha1.InventoryCRD, want))
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "tests", "framework", "testdata", "seeder-v1.8.0", "crds", "metal.harvesterhci.io_inventories.yaml"))
	require.NoError(t, err)
	seeders := &apiextv1.CustomResourceDefinition{}
	require.NoError(t, yaml.Unmarshal(raw, seeders))

	lacking := missingFields(want, seeders)
	for _, f := range []string{"spec.baseboardSpec.connection.caBundle", "spec.baseboardSpec.connection.systemID",
		"spec.baseboardSpec.connection.timeout", "status.hardware"} {
		assert.Contains(t, lacking, f)
	}
	assert.Empty(t, missingFields(want, want))
	assert.Equal(t, []string{"v1alpha1"}, missingFields(want, &apiextv1.CustomResourceDefinition{}), "no served version at all")
}
