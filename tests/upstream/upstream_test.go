package upstream

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		f, err := ReadGoMod(filepath.Join(dir, "go.mod"))
		require.NoError(t, err)
		if required := f.Required("k8s.io/kube-openapi"); required != "" {
			assert.Equal(t, openAPI, newestOf(t, root, lib+"@"+api, "k8s.io/kube-openapi@"+openAPI),
				"k8s.io/kube-openapi is replaced with %s, older than the %s that %s@%s requires", openAPI, required, lib, api)
		}
	}
}

// newestOf is the version of want's module that the go command selects for a
// module requiring lib and want (both path@version): want's own version when
// it is at least what lib's dependencies require. Minimal version selection
// orders the versions, so the test parses none itself.
func newestOf(t *testing.T, root, lib, want string) string {
	t.Helper()
	addon, err := ReadGoMod(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	dir := t.TempDir()
	gomod := fmt.Sprintf("module check\n\ngo %s\n\nrequire (\n\t%s\n\t%s\n)\n", addon.Go,
		strings.Replace(lib, "@", " ", 1), strings.Replace(want, "@", " ", 1))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o600))
	module, _, _ := strings.Cut(want, "@")
	var stdout, stderr bytes.Buffer
	// The whole build list: `go list -m <module>` alone would answer the
	// version go.mod names without selecting.
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Path}} {{.Version}}", "all")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &stdout, &stderr
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	require.NoError(t, cmd.Run(), "go list -m all with %s and %s: %s", lib, want, stderr.String())
	for _, line := range strings.Split(stdout.String(), "\n") {
		if path, version, ok := strings.Cut(line, " "); ok && path == module {
			return version
		}
	}
	require.Failf(t, "not selected", "go list -m all with %s and %s lists no %s", lib, want, module)
	return ""
}

// TestNestedModulesReplaceAsTheAddonDoes: a module under tests/ that builds
// the addon's packages (tests/bgp) must replace client-go and kube-openapi
// exactly as the addon's go.mod does, or its tests would run the controller
// against other Kubernetes libraries than the binary links.
func TestNestedModulesReplaceAsTheAddonDoes(t *testing.T) {
	root := repoRoot(t)
	nested, err := NestedModules(root)
	require.NoError(t, err)
	require.NotEmpty(t, nested, "no Go module under tests/ builds the addon's packages")
	for _, dir := range nested {
		f, err := ReadGoMod(filepath.Join(root, dir, "go.mod"))
		require.NoError(t, err)
		for _, module := range []string{"k8s.io/client-go", "k8s.io/kube-openapi"} {
			want, ok, err := Replacement(root, module)
			require.NoError(t, err)
			require.True(t, ok, "go.mod does not replace %s", module)
			got, ok := f.Replacement(module)
			assert.True(t, ok, "%s/go.mod does not replace %s", dir, module)
			assert.Equal(t, want, got, "%s/go.mod replaces %s otherwise than go.mod", dir, module)
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
