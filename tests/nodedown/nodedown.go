// Package nodedown runs Harvester's own node-down controller (the code of
// the github.com/harvester/harvester version go.mod pins, built by
// scripts/harvester-node-down from tests/harvesternodedown) against a test
// cluster, so that tests see a dead node handled by the very code a
// Harvester cluster runs: its KubeVirt drain taint and its
// node.kubernetes.io/out-of-service taint, landing on their own after the
// times of the vm-force-reset-policy Setting, and taken away when the node
// is Ready again.
package nodedown

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/harvester/harvester-equinix-addon/pkg/generated/clientset/versioned"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/upstream"
)

// binaryName is what scripts/harvester-node-down builds.
const binaryName = "harvester-node-down"

// Binary returns the built controller, or ends the test the way
// cluster.Shared.Require does: a failure under CI=true, a skip otherwise.
// HARVESTER_NODE_DOWN_BIN_DIR (set by scripts/test) names its folder; the
// default is the tools cache folder of the Harvester version go.mod pins.
// A binary built from another main.go or Harvester version counts as
// missing.
func Binary(t testing.TB) string {
	t.Helper()
	bin, msg, err := find()
	require.NoError(t, err)
	if msg != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// find is the binary, or why it is missing.
func find() (bin, missing string, err error) {
	root, err := cluster.RepoRoot()
	if err != nil {
		return "", "", err
	}
	version, err := upstream.GoModVersion(root, upstream.HarvesterModule)
	if err != nil {
		return "", "", err
	}
	dir := os.Getenv("HARVESTER_NODE_DOWN_BIN_DIR")
	if dir == "" {
		dir = filepath.Join(cluster.ToolsCache(), binaryName+"-"+version, "bin")
	}
	bin = filepath.Join(dir, binaryName)
	src, err := os.ReadFile(filepath.Join(root, "tests", "harvesternodedown", "main.go"))
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(src)
	want := fmt.Sprintf("%s %s source %s", upstream.HarvesterModule, version, hex.EncodeToString(sum[:])[:16])
	out, err := exec.Command(bin, "-version").Output()
	if got := strings.TrimSpace(string(out)); err != nil || got != want {
		return bin, fmt.Sprintf("%s is missing or stale (reports %q, %v; want %q); scripts/harvester-node-down builds it (`make test` runs it)",
			bin, got, err, want), nil
	}
	return bin, "", nil
}

// Available says whether the built controller is there, for a caller
// that plays without it otherwise (and says so).
func Available() (string, bool) {
	bin, missing, err := find()
	if err != nil {
		return err.Error(), false
	}
	if missing != "" {
		return missing, false
	}
	return bin, true
}

// Controller is a running node-down controller. Like Harvester's pod, it
// is started again when it exits on its own: Harvester v1.8.0's handler
// dereferences a nil Drained condition when it sees its own drain taint
// before its own status write of that condition (a race of its two
// writes' events), and the process dies of it; the kubelet restarts
// Harvester's container, and so does Controller, a second later.
type Controller struct {
	bin, kubeconfig, ready string
	log                    *os.File
	logPath                string

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	stopping bool
	restarts int
	// created are the Settings its settings provider made at start, which
	// Stop deletes: the cluster is shared by the package's tests.
	created []string
	client  versioned.Interface
}

// Start runs the controller against the cluster (Harvester's Upgrade CRD
// installed first: it lists Upgrades) until the test ends, and waits until
// it runs.
func Start(t testing.TB, c *cluster.Cluster) *Controller {
	t.Helper()
	bin := Binary(t)
	ctl, err := StartBinary(context.Background(), bin, c, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() {
		if n := ctl.Restarts(); n > 0 {
			t.Logf("Harvester's node-down controller exited on its own and was started again %d time(s); its log:\n%s", n, ctl.Log())
		}
		ctl.Stop()
	})
	return ctl
}

// StartBinary runs the binary against the cluster, its log and ready file
// in dir, and waits until it runs (its caches synced, Harvester's Settings
// written).
func StartBinary(ctx context.Context, bin string, c *cluster.Cluster, dir string) (*Controller, error) {
	if err := framework.InstallHarvesterUpgradeCRD(ctx, c); err != nil {
		return nil, err
	}
	client, err := versioned.NewForConfig(c.RESTConfig)
	if err != nil {
		return nil, err
	}
	before, err := settingNames(ctx, client)
	if err != nil {
		return nil, err
	}
	ctl := &Controller{bin: bin, kubeconfig: c.Kubeconfig, ready: filepath.Join(dir, "ready"),
		logPath: filepath.Join(dir, binaryName+".log"), client: client}
	if ctl.log, err = os.Create(ctl.logPath); err != nil {
		return nil, err
	}
	if err := ctl.run(); err != nil {
		_ = ctl.log.Close()
		return nil, err
	}
	// Its caches sync within seconds; its settings provider first writes
	// every Setting Harvester knows.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(ctl.ready); err == nil {
			break
		}
		if ctl.Restarts() > 0 || time.Now().After(deadline) {
			ctl.Stop()
			return nil, fmt.Errorf("harvester's node-down controller never ran; its log:\n%s", ctl.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	after, err := settingNames(ctx, client)
	if err != nil {
		ctl.Stop()
		return nil, err
	}
	for name := range after {
		if !before[name] {
			ctl.created = append(ctl.created, name)
		}
	}
	return ctl, nil
}

// run starts the process, and watches it: one that exits while not being
// stopped is started again after a second.
func (c *Controller) run() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.startLocked()
}

func (c *Controller) startLocked() error {
	cmd := exec.Command(c.bin, "-kube", c.kubeconfig, "-ready-file", c.ready, "-debug")
	cmd.Stdout, cmd.Stderr = c.log, c.log
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	c.cmd, c.exited = cmd, exited
	go func() {
		err := cmd.Wait()
		close(exited)
		c.mu.Lock()
		if c.stopping {
			c.mu.Unlock()
			return
		}
		c.restarts++
		c.mu.Unlock()
		fmt.Fprintf(c.log, "--- harvester-node-down exited (%v); started again in a second, as the kubelet restarts a container\n", err)
		time.Sleep(time.Second)
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.stopping {
			return
		}
		if err := c.startLocked(); err != nil {
			fmt.Fprintf(c.log, "--- harvester-node-down did not start again: %v\n", err)
		}
	}()
	return nil
}

// Restarts counts the times the process exited on its own.
func (c *Controller) Restarts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.restarts
}

func settingNames(ctx context.Context, client versioned.Interface) (map[string]bool, error) {
	list, err := client.HarvesterhciV1beta1().Settings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Harvester's settings: %w", err)
	}
	names := map[string]bool{}
	for _, s := range list.Items {
		names[s.Name] = true
	}
	return names, nil
}

// Stop stops the controller and deletes the Settings it made.
func (c *Controller) Stop() {
	c.mu.Lock()
	c.stopping = true
	cmd, exited := c.cmd, c.exited
	c.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	_ = c.log.Close()
	settings := c.client.HarvesterhciV1beta1().Settings()
	for _, name := range c.created {
		// Best effort: a Setting left behind only adds to the next start's.
		_ = settings.Delete(context.Background(), name, metav1.DeleteOptions{})
	}
	c.created = nil
}

// Log is the controller's output so far.
func (c *Controller) Log() string {
	raw, _ := os.ReadFile(c.logPath)
	return string(raw)
}
