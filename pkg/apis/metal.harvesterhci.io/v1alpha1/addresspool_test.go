package v1alpha1

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestAddressPoolCRDIsSeeders: the chart's AddressPool CRD is Seeder
// v1.8.0's but for its descriptions, so whichever of the two the cluster
// has, the other's objects keep every field and both sides' writes stay
// valid.
func TestAddressPoolCRDIsSeeders(t *testing.T) {
	root := filepath.Join("..", "..", "..", "..")
	ours := schemaOf(t, filepath.Join(root, "charts", "harvester-equinix-addon", "crds", "metal.harvesterhci.io_addresspools.yaml"))
	seeders := schemaOf(t, filepath.Join(root, "tests", "framework", "testdata", "seeder-v1.8.0", "crds", "metal.harvesterhci.io_addresspools.yaml"))
	require.Equal(t, seeders, ours)
}

// schemaOf is a CRD's spec without descriptions.
func schemaOf(t *testing.T, path string) any {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var crd map[string]any
	require.NoError(t, yaml.Unmarshal(raw, &crd))
	return withoutDescriptions(crd["spec"])
}

func withoutDescriptions(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if k != "description" {
				out[k] = withoutDescriptions(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = withoutDescriptions(e)
		}
		return out
	}
	return v
}
