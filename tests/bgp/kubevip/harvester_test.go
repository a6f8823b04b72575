package kubevip

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/upstream"
)

// harvesterKubeVIP is how Harvester, at the version go.mod pins, runs
// kube-vip: read from its own chart, so that the tests run kube-vip as a
// Harvester cluster does and follow Harvester when it changes.
type harvesterKubeVIP struct {
	// env is the DaemonSet's environment: the kube-vip chart's defaults
	// under Harvester's values, as helm merges them.
	env map[string]string
	// rules are the kube-vip chart's ClusterRole.
	rules []rbacv1.PolicyRule
	// tag is the kube-vip image Harvester ships.
	tag string
}

func readHarvesterKubeVIP(t testing.TB) harvesterKubeVIP {
	t.Helper()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	valuesPath, err := upstream.HarvesterFile(root, upstream.HarvesterChart+"/values.yaml")
	require.NoError(t, err)
	raw, err := os.ReadFile(valuesPath)
	require.NoError(t, err)
	var values struct {
		KubeVIP struct {
			Image struct{ Tag string }
			Env   map[string]string
		} `json:"kube-vip"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &values))

	charts, err := filepath.Glob(filepath.Join(filepath.Dir(valuesPath), "charts", "kube-vip-*.tgz"))
	require.NoError(t, err)
	require.Len(t, charts, 1, "Harvester's chart bundles one kube-vip chart")
	files := chartFiles(t, charts[0], "kube-vip/values.yaml", "kube-vip/templates/rbac.yaml")
	var defaults struct{ Env map[string]string }
	require.NoError(t, yaml.Unmarshal(files["kube-vip/values.yaml"], &defaults))

	h := harvesterKubeVIP{env: defaults.Env, tag: values.KubeVIP.Image.Tag}
	for k, v := range values.KubeVIP.Env {
		h.env[k] = v
	}
	h.rules = clusterRoleRules(t, string(files["kube-vip/templates/rbac.yaml"]))
	return h
}

// chartFiles reads the named files out of a packaged chart.
func chartFiles(t testing.TB, tgz string, names ...string) map[string][]byte {
	t.Helper()
	f, err := os.Open(tgz)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	out := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		for _, n := range names {
			if hdr.Name == n {
				out[n], err = io.ReadAll(tr)
				require.NoError(t, err)
			}
		}
	}
	for _, n := range names {
		require.Contains(t, out, n, "%s has no %s", tgz, n)
	}
	return out
}

// clusterRoleRules takes the rules of the ClusterRole in the chart's RBAC
// template; they are plain YAML, only the metadata above them is templated.
func clusterRoleRules(t testing.TB, template string) []rbacv1.PolicyRule {
	t.Helper()
	for _, doc := range strings.Split(template, "\n---") {
		if !strings.Contains(doc, "\nkind: ClusterRole\n") {
			continue
		}
		i := strings.Index(doc, "\nrules:")
		require.GreaterOrEqual(t, i, 0, "the ClusterRole has no rules")
		var role struct{ Rules []rbacv1.PolicyRule }
		require.NoError(t, yaml.Unmarshal([]byte(doc[i:]), &role))
		require.NotEmpty(t, role.Rules)
		return role.Rules
	}
	t.Fatal("the kube-vip chart has no ClusterRole")
	return nil
}

// What the tests rely on in Harvester's kube-vip: ARP mode for Services
// only, on the interface of the default route, one leader for every
// Service. Needs neither root nor kube-vip.
func TestHarvesterRunsKubeVIPForServicesInARPMode(t *testing.T) {
	h := readHarvesterKubeVIP(t)
	for k, want := range map[string]string{
		"vip_arp": "true", "svc_enable": "true", "svc_election": "false", "cp_enable": "false",
		"vip_interface": "", "vip_leaderelection": "false", "enable_service_security": "true",
	} {
		got, ok := h.env[k]
		require.True(t, ok, "Harvester's kube-vip has no %s", k)
		require.Equal(t, want, got, "Harvester's kube-vip %s", k)
	}
	require.NotEmpty(t, h.rules)
	version := kubeVIPVersion(t)
	if h.tag != version {
		t.Logf("Harvester ships kube-vip %s; the tests run %s (scripts/versions says why)", h.tag, version)
	}
}
