package kubevip

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// process is a kube-vip running in a network namespace.
type process struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startInNetns runs bin in ns with env and PATH only, logging to a file in
// dir. It is in a process group of its own and gets SIGKILL if this test
// process dies; when the test ends it gets SIGTERM, then SIGKILL after 10 s.
func startInNetns(t testing.TB, ns, dir, bin string, env []string, args ...string) *process {
	t.Helper()
	logPath := filepath.Join(dir, "kube-vip-"+ns+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	require.NoError(t, err)
	// ip netns exec execs the program in place: the process is kube-vip's.
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns, bin}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		require.NoError(t, err)
	}
	p := &process{cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	t.Cleanup(func() { p.stop(syscall.SIGTERM) })
	return p
}

// stop signals the process group and waits for the process, with SIGKILL
// after 10 s.
func (p *process) stop(sig syscall.Signal) {
	if p.exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// logTail is the end of the process's log, for failure messages.
func (p *process) logTail() string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

// waitUntil polls cond every 20 ms (the reads are local and cheap), and
// fails at once, with kube-vip's log, if kube-vip exits first.
func waitUntil(t testing.TB, p *process, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if p.exited() {
			t.Fatalf("kube-vip exited before %s:\n%s", what, p.logTail())
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v; kube-vip's log:\n%s", what, timeout, p.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logHas tells whether the process's log mentions s.
func logHas(p *process, s string) bool {
	b, _ := os.ReadFile(p.log)
	return strings.Contains(string(b), s)
}
