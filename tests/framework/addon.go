package framework

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
)

// Addon is the real controller binary running as a child process, configured
// like env.Config configures the in-process one. Every run appends its
// stdout and stderr to one log file, which the test scans for secrets.
type Addon struct {
	t           testing.TB
	env         *Env
	bin         string
	logPath     string
	leaderElect bool
	lockName    string
	httpAddr    string
	extraArgs   []string
	// mode and identity are the binary's mode and the chart identity it
	// runs as (nil: cluster-admin).
	mode     string
	identity *Identity

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	starts  int
	secrets map[string]bool
}

// AddonOptions tune the binary.
type AddonOptions struct {
	// ExtraArgs are appended to the flags (a repeated flag's last value wins).
	ExtraArgs []string
	// LeaderElect runs the binary with --leader-elect=true on a Lease of its
	// own, so that a killed leader's Lease must expire before the next run acts.
	LeaderElect bool
	// LockName names that Lease (default: one of the test's own).
	LockName string
	// Mode runs the binary in another mode than the Env's, under the RBAC
	// of that mode's install: the two Addons beside each other.
	Mode string
	// OwnedPools runs that mode's binary under the RBAC of
	// ownedPools.enabled (the hardware mode only); the flag
	// --owned-pools is the caller's to pass.
	OwnedPools bool
}

// StartAddon builds (once per test binary) and starts the controller. It is
// stopped when the test ends, after everything the test registered later
// (pools are deleted while it still runs), and its log is scanned then.
func StartAddon(t testing.TB, env *Env, opts AddonOptions) *Addon {
	t.Helper()
	a := &Addon{
		t: t, env: env, bin: Binary(t),
		logPath:     filepath.Join(t.TempDir(), "controller.log"),
		leaderElect: opts.LeaderElect,
		extraArgs:   opts.ExtraArgs,
		lockName:    "lifecycle-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		secrets:     map[string]bool{MetalToken: true, JoinToken: true},
		mode:        env.Mode,
		identity:    env.Identity,
	}
	if opts.Mode != "" && opts.Mode != env.Mode {
		a.mode = opts.Mode
		if env.Identity != nil {
			if opts.OwnedPools {
				a.identity = ChartIdentityOwnedPools(t, env.Cluster)
			} else {
				a.identity = ChartIdentityOf(t, env.Cluster, opts.Mode)
			}
		}
	}
	a.httpAddr = FreeAddr(t)
	if opts.LockName != "" {
		a.lockName = opts.LockName
	}
	if a.leaderElect && a.identity != nil && a.lockName != a.identity.ServiceAccount {
		env.grantLease(a.lockName, a.identity.ServiceAccount)
	}
	t.Cleanup(func() {
		a.Stop()
		a.AssertLogClean()
	})
	a.Start()
	return a
}

func (a *Addon) args() []string {
	e := a.env
	kubeconfig := e.Cluster.Kubeconfig
	if a.identity != nil {
		kubeconfig = a.identity.Kubeconfig
	}
	return append([]string{
		"--mode", a.mode,
		"--kubeconfig", kubeconfig,
		"--namespace", Namespace,
		"--secret-name", SecretName,
		"--threads", "5",
		"--metal-api-url", e.SimURL,
		"--metal-timeout", "10s",
		"--metal-requests-per-second", "200",
		"--metal-burst", "400",
		"--http-address", a.httpAddr,
		"--ipxe-address", "127.0.0.1:0",
		"--ipxe-public-url", e.IPXEURL,
		"--join-token-secret", SecretName,
		"--join-token-key", "JOIN_TOKEN",
		"--poll-interval", "300ms",
		"--orphan-sweep-interval", "1h",
		"--orphan-grace-period", "1h",
		"--orphan-dry-run",
		"--replacement-backoff", "200ms",
		"--create-backoff", "2s",
		// The tests never reach the release site; the in-process
		// controller checks against a stand-in instead.
		"--check-release-artifacts=false",
		"--leader-elect=" + strconv.FormatBool(a.leaderElect),
		"--leader-lock-name", a.lockName,
		// Debug logs the most; a secret must not leak even there.
		"--log-level", "debug",
	}, a.extraArgs...)
}

// Log is everything the binary has written so far.
func (a *Addon) Log() string {
	raw, _ := os.ReadFile(a.logPath)
	return string(raw)
}

// MetricsURL is where the binary serves /metrics.
func (a *Addon) MetricsURL() string { return "http://" + a.httpAddr + "/metrics" }

// HealthURL is the URL of /healthz or /readyz of the binary.
func (a *Addon) HealthURL(path string) string { return "http://" + a.httpAddr + path }

// Start runs the binary; it must not be running. Its HTTP port is picked
// free (FreeAddr) before the binary binds it, so another pick of the same
// port may take it in between: a start that fails on that alone is tried
// again on another port.
func (a *Addon) Start() {
	a.t.Helper()
	for try := 1; ; try++ {
		from := len(a.Log())
		exited := a.launch()
		err := a.waitHealthy(exited)
		if err == nil {
			return
		}
		if try < 3 && strings.Contains(a.Log()[from:], "address already in use") {
			a.mu.Lock()
			a.cmd = nil
			a.httpAddr = FreeAddr(a.t)
			a.mu.Unlock()
			continue
		}
		a.t.Fatalf("%v:\n%s", err, a.Log())
	}
}

// launch starts the process and returns the channel closed when it exits.
func (a *Addon) launch() chan struct{} {
	a.t.Helper()
	a.mu.Lock()
	if a.cmd != nil {
		a.mu.Unlock()
		a.t.Fatalf("the controller is already running")
	}
	logs, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		a.mu.Unlock()
		a.t.Fatalf("opening the controller log: %v", err)
	}
	a.starts++
	_, _ = logs.WriteString("=== run " + strconv.Itoa(a.starts) + "\n")
	cmd := exec.Command(a.bin, a.args()...)
	// A clean environment: every setting comes from the flags above, none
	// from variables of the machine running the tests.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"KUBE_CACHE_MUTATION_DETECTOR=" + os.Getenv("KUBE_CACHE_MUTATION_DETECTOR")}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		a.mu.Unlock()
		a.t.Fatalf("starting the controller: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logs.Close()
		close(exited)
	}()
	a.cmd, a.exited = cmd, exited
	a.mu.Unlock()
	return exited
}

// waitHealthy returns once the binary serves /healthz, or says why not:
// the binary exited first (bad flags, say), or took too long.
func (a *Addon) waitHealthy(exited chan struct{}) error {
	deadline := time.After(30 * time.Second)
	for {
		select {
		case <-exited:
			return errors.New("the controller exited at start")
		case <-deadline:
			return errors.New("the controller did not serve /healthz within 30s")
		case <-time.After(50 * time.Millisecond):
		}
		if resp, err := http.Get("http://" + a.httpAddr + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
}

// Kill sends SIGKILL and returns once the process is gone. It is safe to call
// from a simulator callback, which then answers the request only after the
// process that sent it has died. It reports whether a process was killed.
func (a *Addon) Kill() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil {
		return false
	}
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.exited
	ws, _ := a.cmd.ProcessState.Sys().(syscall.WaitStatus)
	a.cmd = nil
	return ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// EnsureRunning starts the controller unless it runs: a test that failed
// between a kill and the restart still needs it to delete its pool.
func (a *Addon) EnsureRunning() {
	a.mu.Lock()
	running := a.cmd != nil
	a.mu.Unlock()
	if !running {
		a.Start()
	}
}

// Stop asks for a clean shutdown, as a pod stop does.
func (a *Addon) Stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil {
		return
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
	case <-time.After(30 * time.Second):
		a.t.Errorf("the controller did not exit within 30s of SIGTERM")
		_ = a.cmd.Process.Kill()
		<-a.exited
	}
	a.cmd = nil
}

// RememberPasswords records the generated console passwords while their
// Secrets exist (they go with their Instances), for the final log scan.
func (a *Addon) RememberPasswords() {
	a.t.Helper()
	secs, err := a.env.Kube.CoreV1().Secrets(Namespace).List(a.env.Ctx, metav1.ListOptions{LabelSelector: equinixv1.LabelInstance})
	require.NoError(a.t, err)
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range secs.Items {
		if p := string(s.Data[provision.PasswordKey]); p != "" {
			a.secrets[p] = true
		}
	}
}

// AssertNoSecretLeaks checks the cluster's objects and Events (through the
// framework) and the binary's own log for every secret value seen so far.
func (a *Addon) AssertNoSecretLeaks() {
	a.t.Helper()
	a.RememberPasswords()
	a.env.AssertNoSecretLeaks()
	a.AssertLogClean()
}

// AssertLogClean scans the binary's log for every secret value seen so far.
func (a *Addon) AssertLogClean() {
	a.t.Helper()
	raw, err := os.ReadFile(a.logPath)
	require.NoError(a.t, err)
	log := string(raw)
	assert.NotEmpty(a.t, log, "the controller logged nothing")
	a.mu.Lock()
	defer a.mu.Unlock()
	for s := range a.secrets {
		if i := strings.Index(log, s); i >= 0 {
			a.t.Errorf("a secret value leaked into the controller's log (near %q)", log[max(0, i-80):i])
		}
	}
}

// grantLease lets the chart's ServiceAccount use a Lease of another name than
// the chart's: each test that elects a leader takes a Lease of its own, so
// that no test waits for the Lease a killed controller of an earlier test
// left behind. The rule is the chart's own, for that name.
func (e *Env) grantLease(name, serviceAccount string) {
	e.T.Helper()
	ctx := e.Ctx
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "lease-" + name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
			ResourceNames: []string{name}, Verbs: []string{"get", "update"}}},
	}
	_, err := e.Kube.RbacV1().Roles(Namespace).Create(ctx, role, metav1.CreateOptions{})
	require.NoError(e.T, ignoreExists(err))
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "lease-" + name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: serviceAccount, Namespace: Namespace}},
	}
	_, err = e.Kube.RbacV1().RoleBindings(Namespace).Create(ctx, binding, metav1.CreateOptions{})
	require.NoError(e.T, ignoreExists(err))
}
