package upstream

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	return root
}

// TestReplacesFollowKubernetes: the two replace lines Harvester's module needs
// must move with the Kubernetes libraries, or a bump of k8s.io/api would
// silently leave client-go behind.
func TestReplacesFollowKubernetes(t *testing.T) {
	root := repoRoot(t)
	api, err := GoModVersion(root, "k8s.io/api")
	require.NoError(t, err)
	clientGo, ok, err := Replacement(root, "k8s.io/client-go")
	require.NoError(t, err)
	require.True(t, ok, "go.mod does not replace k8s.io/client-go")
	assert.Equal(t, api, clientGo, "k8s.io/client-go must be replaced with the version of k8s.io/api")

	// kube-openapi must be at least what every Kubernetes library requires,
	// which is what go.mod would hold without Harvester's bogus requirement.
	openAPI, ok, err := Replacement(root, "k8s.io/kube-openapi")
	require.NoError(t, err)
	require.True(t, ok, "go.mod does not replace k8s.io/kube-openapi")
	for _, lib := range []string{"k8s.io/api", "k8s.io/apimachinery", "k8s.io/client-go", "k8s.io/apiextensions-apiserver"} {
		dir, err := ModuleDir(lib, api)
		require.NoError(t, err)
		raw, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		require.NoError(t, err)
		f, err := modfile.Parse(lib, raw, nil)
		require.NoError(t, err)
		for _, r := range f.Require {
			if r.Mod.Path == "k8s.io/kube-openapi" {
				assert.GreaterOrEqual(t, semver.Compare(openAPI, r.Mod.Version), 0,
					"k8s.io/kube-openapi is replaced with %s, older than the %s that %s@%s requires", openAPI, r.Mod.Version, lib, api)
			}
		}
	}
}

// TestSettingsCRDIsHarvesters: the settings CRD the test clusters install is
// Harvester's own, at the version go.mod pins.
func TestSettingsCRDIsHarvesters(t *testing.T) {
	root := repoRoot(t)
	path, err := HarvesterCRD(root, "harvesterhci.io_settings.yaml")
	require.NoError(t, err)
	want := readCRD(t, path)
	got := readCRD(t, filepath.Join(cluster.HarvesterCRDDir(root), "settings.harvesterhci.io.yaml"))
	assert.Equal(t, want.Spec, got.Spec, "tests/cluster/testdata/harvester-crds/settings.harvesterhci.io.yaml differs from %s", path)
}

// TestIPPoolCRDIsHarvesterLoadBalancers: the IPPool CRD the test clusters
// install is harvester-load-balancer's, as the Harvester version go.mod
// pins bundles it.
func TestIPPoolCRDIsHarvesterLoadBalancers(t *testing.T) {
	root := repoRoot(t)
	raw, err := BundledChartFile(root, "harvester-load-balancer", "templates/crds/loadbalancer.harvesterhci.io_ippools.yaml")
	require.NoError(t, err)
	want := &apiextv1.CustomResourceDefinition{}
	require.NoError(t, yaml.UnmarshalStrict(raw, want))
	got := readCRD(t, filepath.Join(cluster.HarvesterCRDDir(root), "ippools.loadbalancer.harvesterhci.io.yaml"))
	assert.Equal(t, want.Spec, got.Spec, "tests/cluster/testdata/harvester-crds/ippools.loadbalancer.harvesterhci.io.yaml differs from harvester-load-balancer's")
}

func readCRD(t *testing.T, path string) *apiextv1.CustomResourceDefinition {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	crd := &apiextv1.CustomResourceDefinition{}
	require.NoError(t, yaml.UnmarshalStrict(raw, crd), path)
	require.NotEmpty(t, crd.Name, path)
	return crd
}

func TestPinnedFilesExist(t *testing.T) {
	root := repoRoot(t)
	for _, f := range []string{"harvesterhci.io_addons.yaml", "harvesterhci.io_settings.yaml"} {
		path, err := HarvesterCRD(root, f)
		require.NoError(t, err)
		assert.NotEmpty(t, readCRD(t, path).Spec.Versions, f)
	}
	for _, f := range []string{"monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml"} {
		path, err := PrometheusOperatorCRD(root, f)
		require.NoError(t, err)
		assert.NotEmpty(t, readCRD(t, path).Spec.Versions, f)
	}
	_, err := ScriptVersion(root, "NO_SUCH_TOOL_VERSION")
	require.ErrorIs(t, err, ErrNotPinned)
	_, err = GoModVersion(root, "example.com/not/a/dependency")
	require.ErrorIs(t, err, ErrNotPinned)
}
