// Package simulatorcmd tests harvester-equinix-addon-simulator
// (tests/cmd/simulator), the standalone Metal simulator the demo and
// `make dev-up` start, as a real process.
package simulatorcmd

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
)

var (
	shared cluster.Shared
	bin    string
)

// TestMain builds the binary once for every test here, and starts the test
// cluster only the join-agent test needs.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "simulatorcmd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	root, err := cluster.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	bin = filepath.Join(dir, "harvester-equinix-addon-simulator")
	build := exec.Command("go", "build", "-o", bin, "./tests/cmd/simulator")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	return cluster.RunMain(m, cluster.Options{}, &shared)
}

// firstLine captures a process's stdout and signals its first line.
type firstLine struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan struct{}
	once sync.Once
}

func newFirstLine() *firstLine { return &firstLine{done: make(chan struct{})} }

func (f *firstLine) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buf.Write(p)
	if bytes.IndexByte(f.buf.Bytes(), '\n') >= 0 {
		f.once.Do(func() { close(f.done) })
	}
	return len(p), nil
}

func (f *firstLine) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.String()
}

// process is a running simulator command.
type process struct {
	cmd    *exec.Cmd
	stdout *firstLine
	stderr string // log file
	exited chan error
	url    string
}

func startSimulator(t *testing.T, args ...string) *process {
	t.Helper()
	p := &process{stdout: newFirstLine(), stderr: filepath.Join(t.TempDir(), "stderr.log"), exited: make(chan error, 1)}
	logs, err := os.Create(p.stderr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = logs.Close() })
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, logs
	require.NoError(t, p.cmd.Start())
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	select {
	case <-p.stdout.done:
	case err := <-p.exited:
		t.Fatalf("the simulator exited before printing its URL: %v\n%s", err, p.logs(t))
	case <-time.After(30 * time.Second):
		t.Fatalf("no URL on stdout within 30s\n%s", p.logs(t))
	}
	p.url = strings.SplitN(p.stdout.String(), "\n", 2)[0]
	return p
}

func (p *process) logs(t *testing.T) string {
	raw, err := os.ReadFile(p.stderr)
	require.NoError(t, err)
	return string(raw)
}

// stop sends SIGTERM and requires a clean exit.
func (p *process) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-p.exited:
		require.NoError(t, err, "exit after SIGTERM was not clean:\n%s", p.logs(t))
	case <-time.After(30 * time.Second):
		t.Fatalf("the simulator did not exit within 30s of SIGTERM\n%s", p.logs(t))
	}
	assert.Equal(t, 0, p.cmd.ProcessState.ExitCode())
}

func sdk(url, token string) *metalv1.APIClient {
	cfg := metalv1.NewConfiguration()
	cfg.Servers = metalv1.ServerConfigurations{{URL: url}}
	cfg.AddDefaultHeader("X-Auth-Token", token)
	return metalv1.NewAPIClient(cfg)
}

func TestServesTheSDKAndExitsCleanlyOnSIGTERM(t *testing.T) {
	p := startSimulator(t, "--token", "x", "--project-id", "y", "--timing-scale", "0")
	require.Regexp(t, `^http://127\.0\.0\.1:[0-9]+/metal/v1$`, p.url)

	ctx := context.Background()
	client := sdk(p.url, "x")
	in := metalv1.DeviceCreateInMetroInput{Metro: "da", Plan: "c3.small.x86", OperatingSystem: "ubuntu_22_04",
		Hostname: metalv1.PtrString("cmd-device-1")}
	created, _, err := client.DevicesApi.CreateDevice(ctx, "y").
		CreateDeviceRequest(metalv1.CreateDeviceRequest{DeviceCreateInMetroInput: &in}).Execute()
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		dev, _, err := client.DevicesApi.FindDeviceById(ctx, created.GetId()).Execute()
		return err == nil && dev.GetState() == metalv1.DEVICESTATE_ACTIVE
	}, 10*time.Second, 20*time.Millisecond, "the device never became active")
	dev, _, err := client.DevicesApi.FindDeviceById(ctx, created.GetId()).Execute()
	require.NoError(t, err)
	assert.Equal(t, "cmd-device-1", dev.GetHostname())

	_, _, err = sdk(p.url, "wrong").DevicesApi.FindDeviceById(ctx, created.GetId()).Execute()
	assert.Error(t, err, "an unknown token is refused")

	p.stop(t)
	assert.Equal(t, p.url+"\n", p.stdout.String(), "stdout holds only the URL; logs go to stderr")
	logs := p.logs(t)
	assert.Contains(t, logs, "device cmd-device-1 active", "progress is logged per state change")
}

func TestRefusesBadFlags(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"no token":                  {[]string{"--project-id", "y"}, `"token"`},
		"no project":                {[]string{"--token", "x"}, `"project-id"`},
		"join token without agent":  {[]string{"--token", "x", "--project-id", "y", "--join-token", "jt-secret-1"}, "needs --kubeconfig"},
		"agent without cluster URL": {[]string{"--token", "x", "--project-id", "y", "--kubeconfig", "/nonexistent", "--join-token", "jt-secret-1"}, "needs --cluster-url and --join-token"},
		"malformed extra project":   {[]string{"--token", "x", "--project-id", "y", "--extra-project", "tok-secret-2"}, "want <token>:<project-id>"},
		"negative timing scale":     {[]string{"--token", "x", "--project-id", "y", "--timing-scale", "-1"}, "negative"},
		"bad log level":             {[]string{"--token", "x", "--project-id", "y", "--log-level", "loud"}, "--log-level"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "stderr: %s", stderr.String())
			assert.Equal(t, 1, exit.ExitCode())
			assert.Contains(t, stderr.String(), tc.want)
			for _, secret := range []string{"jt-secret-1", "tok-secret-2"} {
				assert.NotContains(t, stderr.String(), secret)
			}
		})
	}
}

// With a kubeconfig the command runs the join agent: a single-boot device
// with a correct configuration becomes a Ready Node of the test cluster.
func TestJoinAgentJoinsTheTestCluster(t *testing.T) {
	c := shared.Require(t)
	const joinToken = "cmd-join-token-Q7"
	kube, err := kubernetes.NewForConfig(c.RESTConfig)
	require.NoError(t, err)
	ipxe := httptest.NewServer(harvester.NewIPXEHandler())
	t.Cleanup(ipxe.Close)

	p := startSimulator(t, "--token", "x", "--project-id", "y", "--extra-project", "x2:y2",
		"--timing-scale", "0", "--install-time", "100ms", "--heartbeat-interval", "200ms",
		"--kubeconfig", c.Kubeconfig, "--cluster-url", "10.0.0.10", "--join-token", joinToken)

	ctx := context.Background()
	const hostname = "cmd-single-boot"
	t.Cleanup(func() {
		err := kube.CoreV1().Nodes().Delete(ctx, hostname, metav1.DeleteOptions{})
		if !apierrors.IsNotFound(err) {
			assert.NoError(t, err)
		}
	})
	script, err := harvester.InstallerScriptURL(ipxe.URL, "v1.4.1", equinixv1.BootModeSingleBoot, map[string]string{"mode": "balance-tlb"})
	require.NoError(t, err)
	_, hash, err := harvester.GenerateConsolePassword()
	require.NoError(t, err)
	userdata, err := harvester.RenderJoinConfig(harvester.JoinConfigInput{
		ServerURL: "10.0.0.10", Token: joinToken, Hostname: hostname, PasswordHash: hash, SingleBoot: true,
		BondOptions: map[string]string{"mode": "balance-tlb"}, InstallDevice: "/dev/sda",
		ISOURL: "https://releases.rancher.com/harvester/v1.4.1/harvester-v1.4.1-amd64.iso",
	})
	require.NoError(t, err)
	in := metalv1.DeviceCreateInMetroInput{Metro: "da", Plan: "c3.small.x86", OperatingSystem: "custom_ipxe",
		Hostname: metalv1.PtrString(hostname), IpxeScriptUrl: metalv1.PtrString(script), Userdata: metalv1.PtrString(string(userdata))}
	_, _, err = sdk(p.url, "x2").DevicesApi.CreateDevice(ctx, "y2").
		CreateDeviceRequest(metalv1.CreateDeviceRequest{DeviceCreateInMetroInput: &in}).Execute()
	require.NoError(t, err, "the extra project is served")

	require.Eventually(t, func() bool {
		node, err := kube.CoreV1().Nodes().Get(ctx, hostname, metav1.GetOptions{})
		return err == nil && readyStatus(node) == corev1.ConditionTrue
	}, 30*time.Second, 50*time.Millisecond, "no Ready Node\n%s", p.logs(t))
	// The agent logs the join just after the Node's Ready status is written,
	// and SIGTERM does not wait for it.
	require.Eventually(t, func() bool { return strings.Contains(p.logs(t), "joined the cluster") },
		30*time.Second, 50*time.Millisecond, "the join was not logged")

	p.stop(t)
	assert.NotContains(t, p.logs(t), joinToken, "the join token must never be logged")
}

func readyStatus(node *corev1.Node) corev1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}
