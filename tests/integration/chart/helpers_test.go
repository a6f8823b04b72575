// Package chart tests the Helm chart: lint, rendering, least-privilege RBAC, the
// controller settings the Deployment passes, and applying the rendered manifests
// and examples to a real kube-apiserver.
package chart

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
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
)

// helmVersion is the helm scripts/tools builds; scripts/versions is
// the source of truth and TestHelmVersionMatchesScripts keeps the two in step.
const helmVersion = "v3.22.0"

const (
	releaseName      = "harvester-equinix-addon"
	releaseNamespace = "harvester-system"
	chartName        = "harvester-equinix-addon"
)

// helmBinDir is where scripts/tools builds helm.
func helmBinDir() string { return cluster.HelmBinDir(helmVersion) }

// requireHelm returns the helm binary, or ends the test the way
// cluster.Shared.Require does: a failure under CI=true, a skip otherwise.
func requireHelm(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(helmBinDir(), "helm")
	_, err := os.Stat(bin)
	if err == nil {
		return bin
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("chart test needs helm %s, which is missing: %v", helmVersion, err)
	}
	t.Skipf("no helm %s (%v); `make test` builds it", helmVersion, err)
	return ""
}

func chartDir(t testing.TB) string {
	t.Helper()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	return filepath.Join(root, "charts", chartName)
}

func testdata(name string) string { return filepath.Join("testdata", name) }

// runHelm runs helm with private config and cache folders, so that no user or CI
// repository configuration leaks into the result, and returns stdout.
func runHelm(t testing.TB, args ...string) (string, error) {
	t.Helper()
	bin := requireHelm(t)
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// renderRaw is `helm template` of the chart as Harvester installs it: release and
// namespace named after the Addon CR.
func renderRaw(t testing.TB, extra ...string) (string, error) {
	t.Helper()
	args := append([]string{"template", releaseName, chartDir(t), "--namespace", releaseNamespace}, extra...)
	return runHelm(t, args...)
}

// manifests is a parsed rendering.
type manifests []*unstructured.Unstructured

func render(t testing.TB, extra ...string) (manifests, string) {
	t.Helper()
	out, err := renderRaw(t, extra...)
	require.NoError(t, err)
	objs, err := parseManifests(out)
	require.NoError(t, err)
	return objs, out
}

func parseManifests(doc string) (manifests, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(doc)))
	var objs manifests
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
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("document without kind, apiVersion or name:\n%s", raw)
		}
		objs = append(objs, u)
	}
}

func (m manifests) find(kind, name string) *unstructured.Unstructured {
	for _, o := range m {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func (m manifests) ofKind(kind string) manifests {
	var out manifests
	for _, o := range m {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// typed converts strictly, so a field the API type does not have fails the test.
func typed[T any](t testing.TB, u *unstructured.Unstructured) *T {
	t.Helper()
	require.NotNil(t, u)
	out := new(T)
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true),
		"%s %s", u.GetKind(), u.GetName())
	return out
}

func deployment(t testing.TB, m manifests) *appsv1.Deployment {
	t.Helper()
	return typed[appsv1.Deployment](t, m.find("Deployment", releaseName))
}

func controllerContainer(t testing.TB, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	return d.Spec.Template.Spec.Containers[0]
}

// rbacRules are every rule of the rendered ClusterRoles and Roles, keyed by kind.
func rbacRules(t testing.TB, m manifests) map[string][]rbacv1.PolicyRule {
	t.Helper()
	rules := map[string][]rbacv1.PolicyRule{}
	for _, o := range m.ofKind("ClusterRole") {
		rules["ClusterRole"] = append(rules["ClusterRole"], typed[rbacv1.ClusterRole](t, o).Rules...)
	}
	for _, o := range m.ofKind("Role") {
		rules["Role"] = append(rules["Role"], typed[rbacv1.Role](t, o).Rules...)
	}
	return rules
}

// kubectl runs the kubectl built next to kube-apiserver against the test cluster.
func kubectl(c *cluster.Cluster, stdin string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(cluster.DefaultBinDir(), "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}
