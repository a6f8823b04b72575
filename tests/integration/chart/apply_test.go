package chart

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

const serviceAccount = "system:serviceaccount:" + releaseNamespace + ":" + releaseName

// TestApplyToAPIServer applies the rendered chart (CRDs included) and the
// examples to a real kube-apiserver with server-side apply, which validates every
// field, then checks what the chart's ServiceAccount may and may not do.
func TestApplyToAPIServer(t *testing.T) {
	c := shared.Require(t)
	requireHelm(t)
	ctx := context.Background()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	// A Harvester cluster has its settings CRD; kubectl auth can-i resolves it.
	require.NoError(t, cluster.InstallCRDs(ctx, c.RESTConfig, cluster.HarvesterCRDDir(root)))
	k8s, err := kubernetes.NewForConfig(c.RESTConfig)
	require.NoError(t, err)
	_, err = k8s.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}

	_, defaults := render(t)
	_, allOn := render(t, "--values", testdata("all-on.yaml"))
	applyServerSide(t, c, defaults)
	_, err = kubectl(c, "", "wait", "--for=condition=Established", "--timeout=60s",
		"crd/instancepools.equinix.harvesterhci.io", "crd/instances.equinix.harvesterhci.io")
	require.NoError(t, err)
	// Then as an upgrade to every option on, and back, as Helm would.
	applyServerSide(t, c, allOn)
	live, err := k8s.AppsV1().Deployments(releaseNamespace).Get(ctx, releaseName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, ptr.To[int32](2), live.Spec.Replicas)
	applyServerSide(t, c, defaults)

	t.Run("examples", func(t *testing.T) {
		for _, name := range []string{"secret.yaml", "instancepool.yaml"} {
			raw, err := os.ReadFile(filepath.Join(chartDir(t), "examples", name))
			require.NoError(t, err)
			applyServerSide(t, c, string(raw))
		}
		t.Cleanup(func() {
			_, _ = kubectl(c, "", "delete", "--ignore-not-found", "-f", filepath.Join(chartDir(t), "examples", "instancepool.yaml"))
		})
		secret, err := k8s.CoreV1().Secrets(releaseNamespace).Get(ctx, "equinix-addon", metav1.GetOptions{})
		require.NoError(t, err)
		for _, key := range []string{"METAL_AUTH_TOKEN", "PROJECT_ID", "JOIN_TOKEN"} {
			assert.Contains(t, secret.Data, key)
		}
		out, err := kubectl(c, "", "get", "instancepool", "harvester-pxe-worker", "-o", "jsonpath={.spec.count}/{.spec.metro}")
		require.NoError(t, err)
		assert.Equal(t, "1/SG", out)
	})

	t.Run("RBAC", func(t *testing.T) { testServiceAccountPermissions(t, c) })

	t.Run("controller starts as the ServiceAccount", func(t *testing.T) {
		testControllerStartsWithChartRBAC(ctx, t, c, k8s)
	})

	t.Run("NOTES", func(t *testing.T) {
		// --take-ownership: the objects applied above carry no release annotations,
		// and Helm refuses to render over them otherwise. Nothing is written.
		out, err := runHelm(t, "install", releaseName, chartDir(t), "--namespace", releaseNamespace,
			"--dry-run=client", "--take-ownership", "--kubeconfig", c.Kubeconfig)
		require.NoError(t, err)
		require.Contains(t, out, "NOTES:")
		notes := out[strings.Index(out, "NOTES:"):]
		assert.Contains(t, notes, "create secret generic equinix-addon")
		assert.Contains(t, notes, "--from-literal=JOIN_TOKEN=")
		assert.Contains(t, notes, "http://<VIP>:30881")
		scale, wait, disable := strings.Index(notes, "Scale every pool to zero"), strings.Index(notes, "Wait until no Instance"), strings.Index(notes, "disable the addon")
		assert.True(t, scale >= 0 && scale < wait && wait < disable, "uninstall order: scale to zero, wait, disable:\n%s", notes)

		// The harvester-seeder install with owned pools says what a
		// newcomer needs next: the join token and the chain URL.
		out, err = runHelm(t, "install", "harvester-seeder", chartDir(t), "--namespace", releaseNamespace, "--set", "mode=hardware",
			"--set", "ownedPools.enabled=true", "--dry-run=client", "--take-ownership", "--kubeconfig", c.Kubeconfig)
		require.NoError(t, err)
		notes = out[strings.Index(out, "NOTES:"):]
		assert.Contains(t, notes, "create secret generic equinix-addon --from-literal=JOIN_TOKEN=<cluster-join-token>")
		assert.Contains(t, notes, "label secret equinix-addon equinix.harvesterhci.io/secret=credentials")
		assert.Contains(t, notes, "http://<VIP>:30881/boot/ipxe?mac=${mac}&uuid=${uuid}")
	})
}

func applyServerSide(t *testing.T, c *cluster.Cluster, doc string) {
	t.Helper()
	_, err := kubectl(c, doc, "apply", "--server-side", "--field-manager=chart-test", "-f", "-")
	require.NoError(t, err)
}

// permission is one `kubectl auth can-i` question. namespace "" asks about a
// cluster-scoped resource; "*" asks across all namespaces.
type permission struct {
	verb, resource, subresource, namespace string
}

func (p permission) String() string {
	s := p.verb + " " + p.resource
	if p.subresource != "" {
		s += " --subresource=" + p.subresource
	}
	if p.namespace != "" {
		s += " -n " + p.namespace
	}
	return s
}

func canI(c *cluster.Cluster, p permission) (bool, error) {
	args := []string{"auth", "can-i", p.verb, p.resource, "--as", serviceAccount}
	if p.subresource != "" {
		args = append(args, "--subresource", p.subresource)
	}
	switch p.namespace {
	case "":
	case "*":
		args = append(args, "--all-namespaces")
	default:
		args = append(args, "--namespace", p.namespace)
	}
	// can-i exits 1 for "no", so the answer is read from stdout.
	out, err := kubectl(c, "", args...)
	switch strings.TrimSpace(out) {
	case "yes":
		return true, nil
	case "no":
		return false, nil
	}
	return false, err
}

func testServiceAccountPermissions(t *testing.T, c *cluster.Cluster) {
	const (
		eq    = ".equinix.harvesterhci.io"
		ns    = releaseNamespace
		lease = "leases.coordination.k8s.io/" + releaseName
	)
	allowed := []permission{
		{verb: "watch", resource: "instancepools" + eq},
		{verb: "create", resource: "instances" + eq},
		{verb: "delete", resource: "instances" + eq},
		{verb: "update", resource: "instances" + eq, subresource: "status"},
		{verb: "update", resource: "instancepools" + eq, subresource: "status"},
		{verb: "update", resource: "instancepools" + eq, subresource: "finalizers"},
		{verb: "get", resource: "nodes"},
		{verb: "watch", resource: "nodes"},
		{verb: "patch", resource: "nodes"},
		{verb: "delete", resource: "nodes"},
		{verb: "create", resource: "events", namespace: "default"},
		{verb: "patch", resource: "events", namespace: ns},
		{verb: "watch", resource: "settings.harvesterhci.io"},
		{verb: "get", resource: "namespaces/kube-system"},
		{verb: "get", resource: "namespaces/" + ns},
		{verb: "list", resource: "pods", namespace: "*"},
		{verb: "create", resource: "pods", subresource: "eviction", namespace: "default"},
		{verb: "get", resource: "daemonsets.apps", namespace: "default"},
		{verb: "get", resource: "secrets", namespace: ns},
		{verb: "watch", resource: "secrets", namespace: ns},
		{verb: "create", resource: "secrets", namespace: ns},
		{verb: "delete", resource: "secrets", namespace: ns},
		{verb: "get", resource: "configmaps/vip", namespace: ns},
		{verb: "watch", resource: "configmaps", namespace: ns},
		{verb: "create", resource: "configmaps", namespace: ns},
		{verb: "update", resource: "configmaps/harvester-equinix-addon-ledger", namespace: ns},
		{verb: "update", resource: "configmaps/harvester-equinix-addon-device-events", namespace: ns},
		{verb: "create", resource: "leases.coordination.k8s.io", namespace: ns},
		{verb: "get", resource: lease, namespace: ns},
		{verb: "update", resource: lease, namespace: ns},
	}
	denied := []permission{
		{verb: "get", resource: "secrets", namespace: "kube-system"},
		{verb: "list", resource: "secrets", namespace: "*"},
		{verb: "delete", resource: "namespaces"},
		{verb: "get", resource: "namespaces/default"},
		{verb: "list", resource: "namespaces"},
		{verb: "create", resource: "pods", namespace: ns},
		{verb: "delete", resource: "pods", namespace: ns},
		{verb: "create", resource: "nodes"},
		{verb: "update", resource: "configmaps/vip", namespace: ns},
		{verb: "patch", resource: "instancepools" + eq},
		{verb: "delete", resource: "instancepools" + eq},
		{verb: "update", resource: "nodes"},
		{verb: "update", resource: "secrets", namespace: ns},
		{verb: "patch", resource: "secrets", namespace: ns},
		{verb: "get", resource: "pods", namespace: "default"},
		{verb: "create", resource: "events.events.k8s.io", namespace: ns},
		{verb: "update", resource: "leases.coordination.k8s.io/another-lease", namespace: ns},
		{verb: "create", resource: "leases.coordination.k8s.io", namespace: "kube-system"},
		{verb: "update", resource: "settings.harvesterhci.io"},
		{verb: "create", resource: "deployments.apps", namespace: ns},
		{verb: "create", resource: "clusterrolebindings.rbac.authorization.k8s.io"},
		{verb: "update", resource: "roles.rbac.authorization.k8s.io", namespace: ns},
		{verb: "impersonate", resource: "serviceaccounts", namespace: ns},
		{verb: "create", resource: "serviceaccounts", subresource: "token", namespace: ns},
		{verb: "delete", resource: "customresourcedefinitions.apiextensions.k8s.io"},
	}
	for _, tc := range []struct {
		want  bool
		perms []permission
	}{{true, allowed}, {false, denied}} {
		for _, p := range tc.perms {
			t.Run(fmt.Sprintf("%s=%t", p, tc.want), func(t *testing.T) {
				got, err := canI(c, p)
				require.NoError(t, err)
				assert.Equal(t, tc.want, got)
			})
		}
	}
}

// testControllerStartsWithChartRBAC runs the real binary with a token of the
// chart's ServiceAccount and the rendered settings: a watch or lease the RBAC
// forgot keeps the caches from syncing, so the controllers never start.
func testControllerStartsWithChartRBAC(ctx context.Context, t *testing.T, c *cluster.Cluster, k8s kubernetes.Interface) {
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "harvester-equinix-addon")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	kubeconfig := serviceAccountKubeconfig(ctx, t, c, k8s)
	m, _ := render(t)
	container := controllerContainer(t, deployment(t, m))
	// The iPXE port is the system's pick as the binary binds it. The HTTP
	// port must be known to ask /readyz: it is picked free first, so
	// another process may take it before the binary binds it, and a start
	// that fails on that alone is tried again on another.
	var (
		httpAddr string
		cmd      *exec.Cmd
		done     chan struct{}
		logPath  string
	)
	start := func() {
		httpAddr = framework.FreeAddr(t)
		proc := exec.Command(bin, "--kubeconfig", kubeconfig, "--http-address", httpAddr, "--ipxe-address", "127.0.0.1:0")
		proc.Env = []string{"HOME=" + t.TempDir()}
		for _, e := range container.Env {
			value := e.Value
			if e.ValueFrom != nil {
				value = releaseNamespace
			}
			proc.Env = append(proc.Env, e.Name+"="+value)
		}
		logPath = filepath.Join(t.TempDir(), "controller.log")
		logs, err := os.Create(logPath)
		require.NoError(t, err)
		proc.Stdout, proc.Stderr = logs, logs
		require.NoError(t, proc.Start())
		exited := make(chan struct{})
		go func() {
			_ = proc.Wait()
			_ = logs.Close()
			close(exited)
		}()
		cmd, done = proc, exited
		t.Cleanup(func() {
			_ = proc.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				_ = proc.Process.Kill()
			}
		})
	}

	readLog := func() string {
		raw, _ := os.ReadFile(logPath)
		return string(raw)
	}
	// waitFor ends the test at once if the controller exits (a crash, or a
	// Forbidden it cannot get past), with its log; it reports an exit that
	// only lost the HTTP port.
	waitFor := func(what string, timeout time.Duration, cond func() bool) (portTaken bool) {
		t.Helper()
		deadline := time.NewTimer(timeout)
		defer deadline.Stop()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for !cond() {
			select {
			case <-done:
				if strings.Contains(readLog(), "address already in use") {
					return true
				}
				t.Fatalf("the controller exited (%s) before %s; log:\n%s", cmd.ProcessState, what, readLog())
			case <-deadline.C:
				t.Fatalf("%s: not within %s; log:\n%s", what, timeout, readLog())
			case <-tick.C:
			}
		}
		return false
	}
	for try := 1; ; try++ {
		start()
		portTaken := waitFor("controllers started as "+serviceAccount, 60*time.Second, func() bool {
			return strings.Contains(readLog(), "controllers started")
		})
		if !portTaken {
			break
		}
		require.Less(t, try, 3, "the HTTP port was taken three times; log:\n%s", readLog())
		t.Logf("%s was taken before the controller bound it: starting it again on another port", httpAddr)
	}
	lease, err := k8s.CoordinationV1().Leases(releaseNamespace).Get(ctx, releaseName, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, lease.Spec.HolderIdentity)
	assert.NotEmpty(t, *lease.Spec.HolderIdentity)
	portTaken := waitFor("/readyz answered 200", 30*time.Second, func() bool {
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	require.False(t, portTaken, "the controller lost its HTTP port after its controllers started; log:\n%s", readLog())
	assert.NotContains(t, strings.ToLower(readLog()), "forbidden")
}

// serviceAccountKubeconfig writes a kubeconfig holding a short-lived token of the
// chart's ServiceAccount, what the pod would mount.
func serviceAccountKubeconfig(ctx context.Context, t *testing.T, c *cluster.Cluster, k8s kubernetes.Interface) string {
	tr, err := k8s.CoreV1().ServiceAccounts(releaseNamespace).CreateToken(ctx, releaseName, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	admin, err := clientcmd.LoadFromFile(c.Kubeconfig)
	require.NoError(t, err)
	server := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster]
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hea"] = server
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["hea"] = &clientcmdapi.Context{Cluster: "hea", AuthInfo: "sa"}
	cfg.CurrentContext = "hea"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}
