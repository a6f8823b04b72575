package kubevip

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/upstream"
)

const (
	// kvNamespace is where Harvester runs kube-vip and where it keeps its
	// Services lease.
	kvNamespace = "harvester-system"
	kvAccount   = "kube-vip"
	leaseName   = "plndr-svcs-lock"
	// apiInNetns is where kube-vip finds the apiserver from a namespace.
	apiInNetns = "127.0.0.1:6443"
)

// kubeVIPVersion is the version scripts/versions pins.
func kubeVIPVersion(t testing.TB) string {
	t.Helper()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	v, err := upstream.ScriptVersion(root, "KUBE_VIP_VERSION")
	require.NoError(t, err)
	return v
}

// requireNetns ends the test unless it can make network namespaces: root
// and ip(8); a failure under CI=true, a skip otherwise.
func requireNetns(t testing.TB) {
	t.Helper()
	missing := ""
	if _, err := exec.LookPath("ip"); err != nil {
		missing = "ip(8) from iproute2"
	}
	if os.Geteuid() != 0 {
		missing = "root (network namespaces, port 179)"
	}
	if missing == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("this test needs %s", missing)
	}
	t.Skipf("this test needs %s", missing)
}

// kubeVIP is the binary under test.
type kubeVIP struct {
	bin, version string
}

// requireKubeVIP returns the kube-vip scripts/tools built, or ends the test
// as cluster.Shared.Require does: a failure under CI=true, a skip otherwise.
// It also needs root and ip(8).
func requireKubeVIP(t testing.TB) kubeVIP {
	t.Helper()
	requireNetns(t)
	version := kubeVIPVersion(t)
	dir := os.Getenv("KUBE_VIP_BIN_DIR")
	if dir == "" {
		dir = filepath.Join(cluster.ToolsCache(), "kube-vip-"+version, "bin")
	}
	bin := filepath.Join(dir, "kube-vip")
	if _, err := os.Stat(bin); err != nil {
		msg := "the kube-vip tests need kube-vip " + version + " (scripts/tools kube-vip builds it): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	// kube-vip reads /etc/kubernetes/admin.conf before $HOME/.kube/config.
	if _, err := os.Stat("/etc/kubernetes/admin.conf"); err == nil {
		t.Fatal("/etc/kubernetes/admin.conf exists: kube-vip would talk to that cluster instead of the test's")
	}
	return kubeVIP{bin: bin, version: version}
}

// identity gives kube-vip what the kube-vip chart gives it (its
// ServiceAccount and ClusterRole), and returns a HOME whose .kube/config
// holds a token of that ServiceAccount for the apiserver as seen from a
// namespace. Outside a pod kube-vip has no token of its own.
func identity(t testing.TB, env *framework.Env, h harvesterKubeVIP) string {
	t.Helper()
	ctx, k := env.Ctx, env.Kube
	created := func(err error) {
		t.Helper()
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	_, err := k.CoreV1().ServiceAccounts(kvNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: kvAccount}}, metav1.CreateOptions{})
	created(err)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: kvAccount}, Rules: h.rules}
	if _, err := k.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = k.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{})
		require.NoError(t, err)
	} else {
		require.NoError(t, err)
	}
	_, err = k.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: kvAccount},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: kvAccount},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: kvAccount, Namespace: kvNamespace}},
	}, metav1.CreateOptions{})
	created(err)

	expiry := int64(3600)
	tok, err := k.CoreV1().ServiceAccounts(kvNamespace).CreateToken(ctx, kvAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: "https://" + apiInNetns, CertificateAuthorityData: env.Cluster.RESTConfig.CAData}
	cfg.AuthInfos[kvAccount] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: kvAccount}
	cfg.CurrentContext = "test"
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".kube"), 0o700))
	require.NoError(t, clientcmd.WriteToFile(*cfg, filepath.Join(home, ".kube", "config")))
	return home
}

// podEnv is what a kube-vip pod has that a process must be told: its node
// (a pod on the host network takes the hostname), the namespace of its
// lease (a pod reads its ServiceAccount's) and where its kubeconfig is.
func podEnv(node, home string) map[string]string {
	return map[string]string{"vip_nodename": node, "cp_namespace": kvNamespace, "HOME": home}
}

// envList turns variables into a process environment, sorted for the logs.
func envList(vars ...map[string]string) []string {
	merged := map[string]string{}
	for _, m := range vars {
		for k, v := range m {
			merged[k] = v
		}
	}
	out := make([]string, 0, len(merged))
	for k, v := range merged {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// apiTarget is the test apiserver's host:port.
func apiTarget(env *framework.Env) string {
	return strings.TrimPrefix(env.Cluster.APIServerURL(), "https://")
}

// logDir keeps kube-vip's logs under $KV_LOG_DIR when set.
func logDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("KV_LOG_DIR"); d != "" {
		dir := filepath.Join(d, strings.ReplaceAll(t.Name(), "/", "_"))
		require.NoError(t, os.MkdirAll(dir, 0o755))
		return dir
	}
	return t.TempDir()
}

// untilService waits, by watch, until cond holds for the Service.
func untilService(ctx context.Context, t testing.TB, k kubernetes.Interface, ns, name string, cond func(*corev1.Service) bool) {
	t.Helper()
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return k.CoreV1().Services(ns).List(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return k.CoreV1().Services(ns).Watch(ctx, o)
		},
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Service{}, nil, func(e watch.Event) (bool, error) {
		s, ok := e.Object.(*corev1.Service)
		return ok && cond(s), nil
	})
	require.NoError(t, err, "Service %s/%s", ns, name)
}

// untilLeaseHolder waits, by watch, until kube-vip's Services lease names holder.
func untilLeaseHolder(ctx context.Context, t testing.TB, k kubernetes.Interface, holder string) {
	t.Helper()
	sel := fields.OneTermEqualSelector("metadata.name", leaseName).String()
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return k.CoordinationV1().Leases(kvNamespace).List(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return k.CoordinationV1().Leases(kvNamespace).Watch(ctx, o)
		},
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &coordinationv1.Lease{}, nil, func(e watch.Event) (bool, error) {
		l, ok := e.Object.(*coordinationv1.Lease)
		return ok && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == holder, nil
	})
	require.NoError(t, err, "lease %s/%s held by %s", kvNamespace, leaseName, holder)
}
