package framework

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
)

// Release is how Harvester installs the chart: release and namespace named
// after the Addon CR. The ServiceAccount, its roles and its bindings are
// named after the release.
//
// The hardware mode is installed as Harvester's harvester-seeder Addon: its
// release, ServiceAccount and roles are named so.
const (
	Release       = "harvester-equinix-addon"
	SeederRelease = "harvester-seeder"
	HelmVersion   = "v3.22.0"
)

// Identity is the chart's ServiceAccount with the chart's own RBAC, as the
// controller's pod runs.
type Identity struct {
	RESTConfig *rest.Config
	Kubeconfig string
	// ServiceAccount is its name (the release's).
	ServiceAccount string
	// Rules are the rendered ClusterRole and Role rules.
	ClusterRules, NamespaceRules []rbacv1.PolicyRule
}

type identityKey struct {
	c    *cluster.Cluster
	mode string
	// ownedPools renders the hardware mode with ownedPools.enabled.
	ownedPools bool
}

var (
	identityMu sync.Mutex
	identities = map[identityKey]*Identity{}
	// ownedPoolsApplied says, by cluster and mode, whether the rules the
	// cluster holds are those with owned pools: with and without, the
	// objects have the same names, so a package testing both holds those
	// of the test that runs.
	ownedPoolsApplied = map[identityKey]bool{}
)

// ChartIdentity renders the chart (helm template) in the equinix mode,
// applies its ServiceAccount, ClusterRole, Role and bindings to the
// cluster, and returns credentials of that ServiceAccount. The integration
// tests run the controller with them, so a verb the chart lacks fails the
// tests that need it. Once per cluster.
func ChartIdentity(t testing.TB, c *cluster.Cluster) *Identity {
	return ChartIdentityOf(t, c, config.ModeEquinix)
}

// ChartIdentityOf is ChartIdentity for a mode: the hardware mode's is the
// chart installed as release harvester-seeder with mode=hardware, as the
// Addon installs it.
func ChartIdentityOf(t testing.TB, c *cluster.Cluster, mode string) *Identity {
	t.Helper()
	return chartIdentity(t, c, mode, false)
}

// ChartIdentityOwnedPools is the hardware mode's identity with the pools of
// servers you own on (ownedPools.enabled). Its objects have the names of
// the hardware mode's: a package uses one or the other.
func ChartIdentityOwnedPools(t testing.TB, c *cluster.Cluster) *Identity {
	t.Helper()
	return chartIdentity(t, c, config.ModeSeeder, true)
}

func chartIdentity(t testing.TB, c *cluster.Cluster, mode string, ownedPools bool) *Identity {
	t.Helper()
	identityMu.Lock()
	defer identityMu.Unlock()
	key := identityKey{c: c, mode: mode, ownedPools: ownedPools}
	names := identityKey{c: c, mode: mode}
	if id, ok := identities[key]; ok && ownedPoolsApplied[names] == ownedPools {
		return id
	}
	id, err := applyChartIdentity(context.Background(), t, c, mode, ownedPools)
	if err != nil {
		t.Fatalf("running the controller under the chart's RBAC: %v", err)
	}
	identities[key], ownedPoolsApplied[names] = id, ownedPools
	return id
}

// ReleaseOf is the release each mode is installed as.
func ReleaseOf(mode string) string {
	if mode == config.ModeSeeder {
		return SeederRelease
	}
	return Release
}

func applyChartIdentity(ctx context.Context, t testing.TB, c *cluster.Cluster, mode string, ownedPools bool) (*Identity, error) {
	// The harvester-seeder package is the chart under that name
	// (scripts/package), which nameOverride stands in for.
	args := []string{"--set", "mode=" + mode, "--set", "nameOverride=" + ReleaseOf(mode)}
	if ownedPools {
		args = append(args, "--set", "ownedPools.enabled=true")
	}
	out, err := helmTemplate(t, ReleaseOf(mode), args...)
	if err != nil {
		return nil, err
	}
	k8s, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return nil, err
	}
	if _, err := k8s.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	id := &Identity{ServiceAccount: ReleaseOf(mode)}
	docs, err := splitManifests(out)
	if err != nil {
		return nil, err
	}
	for _, u := range docs {
		if err := applyRBAC(ctx, k8s, u, id); err != nil {
			return nil, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	id.RESTConfig, id.Kubeconfig, err = c.ServiceAccountConfig(ctx, Namespace, id.ServiceAccount)
	return id, err
}

func applyRBAC(ctx context.Context, k8s kubernetes.Interface, u *unstructured.Unstructured, id *Identity) error {
	conv := runtime.DefaultUnstructuredConverter
	switch u.GetKind() {
	case "ServiceAccount":
		sa := &corev1.ServiceAccount{}
		if err := conv.FromUnstructured(u.Object, sa); err != nil {
			return err
		}
		_, err := k8s.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{})
		return ignoreExists(err)
	case "ClusterRole":
		r := &rbacv1.ClusterRole{}
		if err := conv.FromUnstructured(u.Object, r); err != nil {
			return err
		}
		id.ClusterRules = append(id.ClusterRules, r.Rules...)
		_, err := k8s.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// The other identity of the same names holds it: RBAC objects
			// take an update without a resource version.
			_, err = k8s.RbacV1().ClusterRoles().Update(ctx, r, metav1.UpdateOptions{})
		}
		return err
	case "ClusterRoleBinding":
		b := &rbacv1.ClusterRoleBinding{}
		if err := conv.FromUnstructured(u.Object, b); err != nil {
			return err
		}
		_, err := k8s.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{})
		return ignoreExists(err)
	case "Role":
		r := &rbacv1.Role{}
		if err := conv.FromUnstructured(u.Object, r); err != nil {
			return err
		}
		id.NamespaceRules = append(id.NamespaceRules, r.Rules...)
		_, err := k8s.RbacV1().Roles(r.Namespace).Create(ctx, r, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			_, err = k8s.RbacV1().Roles(r.Namespace).Update(ctx, r, metav1.UpdateOptions{})
		}
		return err
	case "RoleBinding":
		b := &rbacv1.RoleBinding{}
		if err := conv.FromUnstructured(u.Object, b); err != nil {
			return err
		}
		_, err := k8s.RbacV1().RoleBindings(b.Namespace).Create(ctx, b, metav1.CreateOptions{})
		return ignoreExists(err)
	}
	return nil
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// helmTemplate renders the chart with private helm folders, so no user or
// CI repository configuration leaks in.
func helmTemplate(t testing.TB, release string, args ...string) (string, error) {
	bin := filepath.Join(cluster.HelmBinDir(HelmVersion), "helm")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			return "", fmt.Errorf("helm %s is missing: %w", HelmVersion, err)
		}
		t.Skipf("no helm %s (%v); `make test` builds it", HelmVersion, err)
	}
	root, err := cluster.RepoRoot()
	if err != nil {
		return "", err
	}
	home := t.TempDir()
	cmd := exec.Command(bin, append([]string{"template", release, filepath.Join(root, "charts", Release), "--namespace", Namespace}, args...)...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("helm template: %w\n%s", err, stderr.String())
	}
	return stdout.String(), nil
}

func splitManifests(doc string) ([]*unstructured.Unstructured, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(doc)))
	var objs []*unstructured.Unstructured
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
			return nil, err
		}
		if len(obj) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: obj})
		}
	}
}
