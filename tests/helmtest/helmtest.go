// Package helmtest runs the helm and promtool binaries that scripts/tools builds
// against the chart, for tests outside the chart package: rendering, installing
// on the test apiserver and checking the alerting rules.
package helmtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/upstream"
)

// Release and chart names as Harvester installs the addon: the Addon CR's
// name and namespace.
const (
	Release   = "harvester-equinix-addon"
	Namespace = "harvester-system"
	Chart     = "harvester-equinix-addon"
)

// Root is the repository root.
func Root(t testing.TB) string {
	t.Helper()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	return root
}

// ChartDir is the chart's source folder.
func ChartDir(t testing.TB) string { return filepath.Join(Root(t), "charts", Chart) }

// requireTool returns the path of a binary scripts/tools builds, or ends the
// test the way cluster.Shared.Require does: a failure under CI=true, a skip
// otherwise.
func requireTool(t testing.TB, name, envDir, versionVar string) string {
	t.Helper()
	dir := os.Getenv(envDir)
	if dir == "" {
		version, err := upstream.ScriptVersion(Root(t), versionVar)
		require.NoError(t, err)
		dir = filepath.Join(cluster.ToolsCache(), name+"-"+version, "bin")
	}
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("this test needs %s, which is missing: %v", name, err)
		}
		t.Skipf("no %s (%v); `make test` builds it (scripts/tools %s)", name, err, name)
	}
	return bin
}

// Helm returns the helm binary.
func Helm(t testing.TB) string { return requireTool(t, "helm", "HELM_BIN_DIR", "HELM_VERSION") }

// Promtool returns the promtool binary.
func Promtool(t testing.TB) string {
	return requireTool(t, "promtool", "PROMTOOL_BIN_DIR", "PROMETHEUS_VERSION")
}

// Yq returns mikefarah's yq, which Harvester's upgrade script calls.
func Yq(t testing.TB) string { return requireTool(t, "yq", "YQ_BIN_DIR", "YQ_VERSION") }

// Run runs a command and returns its stdout; the error carries both outputs.
func Run(cmd *exec.Cmd) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s: %w\n%s%s", strings.Join(cmd.Args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// HelmEnv gives helm private config, cache and data folders, so no user or CI
// repository configuration leaks into a test.
func HelmEnv(home string) []string {
	return append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
}

// RunHelm runs helm with private folders and returns stdout.
func RunHelm(t testing.TB, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(Helm(t), args...)
	cmd.Env = HelmEnv(t.TempDir())
	return Run(cmd)
}

// Manifests is a parsed rendering.
type Manifests []*unstructured.Unstructured

// Render is `helm template` of the chart as Harvester installs it.
func Render(t testing.TB, extra ...string) Manifests {
	t.Helper()
	out, err := RunHelm(t, append([]string{"template", Release, ChartDir(t), "--namespace", Namespace}, extra...)...)
	require.NoError(t, err)
	m, err := Parse(out)
	require.NoError(t, err)
	return m
}

// Parse splits a multi-document YAML stream into objects.
func Parse(doc string) (Manifests, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(doc)))
	var objs Manifests
	for {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		obj := map[string]interface{}{}
		if err := yaml.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("%w in:\n%s", err, raw)
		}
		if len(obj) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: obj})
	}
}

// Find returns the object of that kind and name, or nil.
func (m Manifests) Find(kind, name string) *unstructured.Unstructured {
	for _, o := range m {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// OfKind returns every object of a kind.
func (m Manifests) OfKind(kind string) Manifests {
	var out Manifests
	for _, o := range m {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// YAML joins objects back into one stream, for kubectl.
func (m Manifests) YAML(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	for _, o := range m {
		raw, err := yaml.Marshal(o.Object)
		require.NoError(t, err)
		b.WriteString("---\n")
		b.Write(raw)
	}
	return b.String()
}

// Kubectl runs the kubectl built next to kube-apiserver against a cluster.
func Kubectl(c *cluster.Cluster, stdin string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(cluster.DefaultBinDir(), "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	return Run(cmd)
}
