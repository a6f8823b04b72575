package helmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	harvesterv1beta1 "github.com/harvester/harvester/pkg/apis/harvesterhci.io/v1beta1"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
)

// ReadAddon reads an Addon manifest into Harvester's own type, strictly: a
// field Harvester's Addon lacks fails the test.
func ReadAddon(t testing.TB, path string) *harvesterv1beta1.Addon {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	a := &harvesterv1beta1.Addon{}
	require.NoError(t, yaml.UnmarshalStrict(raw, a))
	return a
}

// InstallAddon installs an Addon's chart as Harvester does once the Addon is
// enabled: its addon controller makes a helm-controller HelmChart of the
// Addon's name and namespace, whose job runs
//
//	helm upgrade --install <addon name> <repo>/<spec.chart> --namespace <addon namespace> --version <spec.version> -f <spec.valuesContent>
//
// repo stands in for spec.repo (a chart repository served by the test).
// It returns helm's output; the error carries it too.
func InstallAddon(t testing.TB, c *cluster.Cluster, a *harvesterv1beta1.Addon, repo string) (string, error) {
	t.Helper()
	values := filepath.Join(t.TempDir(), "values-01_HelmChart.yaml")
	require.NoError(t, os.WriteFile(values, []byte(a.Spec.ValuesContent), 0o600))
	cmd := exec.Command(Helm(t), "upgrade", "--install", a.Name, a.Spec.Chart, "--repo", repo,
		"--namespace", a.Namespace, "--version", a.Spec.Version, "-f", values, "--kubeconfig", c.Kubeconfig)
	cmd.Env = HelmEnv(t.TempDir())
	return Run(cmd)
}
