package binary

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

var shared cluster.Shared

func TestMain(m *testing.M) {
	os.Exit(cluster.RunMain(m, cluster.Options{}, &shared))
}

// TestBinaryLeaseHealthAndCleanExit runs the real binary the way the chart's
// Deployment does and checks its process contract.
func TestBinaryLeaseHealthAndCleanExit(t *testing.T) {
	c := shared.Require(t)
	ctx := context.Background()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	require.NoError(t, cluster.InstallCRDs(ctx, c.RESTConfig, cluster.AddonCRDDir(root), cluster.HarvesterCRDDir(root)))
	k8s, err := kubernetes.NewForConfig(c.RESTConfig)
	require.NoError(t, err)
	_, err = k8s.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "harvester-system"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	bin := filepath.Join(t.TempDir(), "harvester-equinix-addon")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	// The HTTP port is picked here and bound by the binary a moment later
	// (another process may take it meanwhile); the iPXE port, which the
	// test never asks, is the kernel's choice at bind.
	addr := framework.FreeAddr(t)
	cmd := exec.Command(bin, "--kubeconfig", c.Kubeconfig, "--http-address", addr, "--ipxe-address", "127.0.0.1:0")
	logs, err := os.Create(filepath.Join(t.TempDir(), "controller.log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	get := func(path string) int {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Eventually(t, func() bool { return get("/healthz") == http.StatusOK }, 30*time.Second, 100*time.Millisecond)

	var holder string
	require.Eventually(t, func() bool {
		lease, err := k8s.CoordinationV1().Leases("harvester-system").Get(ctx, "harvester-equinix-addon", metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil {
			return false
		}
		holder = *lease.Spec.HolderIdentity
		return holder != ""
	}, 30*time.Second, 100*time.Millisecond, "the controller never took the leader lease")
	require.Eventually(t, func() bool { return get("/readyz") == http.StatusOK }, 30*time.Second, 100*time.Millisecond)
	assert.Equal(t, http.StatusOK, get("/metrics"))

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		_ = logs.Sync()
		raw, _ := os.ReadFile(logs.Name())
		require.NoError(t, err, "exit after SIGTERM was not clean:\n%s", raw)
	case <-time.After(30 * time.Second):
		t.Fatal("the controller did not exit within 30s of SIGTERM")
	}
	assert.Equal(t, 0, cmd.ProcessState.ExitCode())

	// The lease is handed back on shutdown so a standby takes over at once.
	lease, err := k8s.CoordinationV1().Leases("harvester-system").Get(ctx, "harvester-equinix-addon", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "",
		fmt.Sprintf("lease still held by %v after shutdown", lease.Spec.HolderIdentity))
}
