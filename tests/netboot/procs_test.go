package netboot

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

// process is a program the test started in a namespace.
type process struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startIn runs argv in namespace ns, its output to a file in dir, in a
// process group of its own that gets SIGKILL should this test process die;
// the test's end stops it (SIGTERM, then SIGKILL after 10 s).
func startIn(t *testing.T, ns, dir, name string, argv ...string) *process {
	t.Helper()
	logPath := filepath.Join(dir, name+".out")
	f, err := os.Create(logPath)
	require.NoError(t, err)
	// ip netns exec execs the program in place: the pid is the program's.
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns}, argv...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
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
	t.Cleanup(p.stop)
	return p
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *process) stop() {
	if p.exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// output is what the program wrote so far.
func (p *process) output() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// dnsmasq runs dnsmasq in ns with conf as its whole configuration file,
// in the foreground, its leases, pid file and log (DHCP and TFTP
// included) in dir. It returns the process and the log's path.
func dnsmasq(t *testing.T, ns, dir, conf string) (*process, string) {
	t.Helper()
	confPath := filepath.Join(dir, "dnsmasq.conf")
	require.NoError(t, os.WriteFile(confPath, []byte(conf), 0o600))
	logPath := filepath.Join(dir, "dnsmasq.log")
	p := startIn(t, ns, dir, "dnsmasq", dnsmasqBin, "--keep-in-foreground", "--conf-file="+confPath,
		"--pid-file="+filepath.Join(dir, "dnsmasq.pid"), "--dhcp-leasefile="+filepath.Join(dir, "dnsmasq.leases"),
		"--log-facility="+logPath, "--log-dhcp", "--user=root", "--group=root")
	// It is serving once it logged its start; a configuration it refuses
	// ends it at once.
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(logPath)
		return p.exited() || strings.Contains(string(b), "started, version")
	}, 30*time.Second, 50*time.Millisecond, "dnsmasq did not start: %s%s", p.output(), readFile(logPath))
	require.False(t, p.exited(), "dnsmasq refused the configuration:\n%s\n%s%s", conf, p.output(), readFile(logPath))
	return p, logPath
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
