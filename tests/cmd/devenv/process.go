package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The state folder's PID lists: the cluster's processes, and the rest
// (simulator, controllers). `down` stops both, the second first.
const (
	clusterPIDs = "pids"
	appPIDs     = "app-pids"
)

// process is a program the environment started, its stdout and stderr in
// files of the state folder.
type process struct {
	name    string
	cmd     *exec.Cmd
	stdout  string
	logPath string
}

// start runs bin with args as name: stdout to <dir>/<name>.out, stderr
// (the log) to <dir>/<name>.log, in a process group of its own, its PID
// recorded for `down`. Unless detached (make dev-up), the kernel ends it
// when this command dies, so that a killed demo leaves nothing running.
func start(dir string, detached bool, name, bin string, args ...string) (*process, error) {
	p := &process{name: name, stdout: filepath.Join(dir, name+".out"), logPath: filepath.Join(dir, name+".log")}
	out, err := os.Create(p.stdout)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	log, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = out, log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !detached {
		p.cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	fmt.Fprintf(os.Stderr, "    %s: pid %d, log %s\n", name, p.cmd.Process.Pid, p.logPath)
	if err := recordPIDs(dir, appPIDs, p.cmd.Process.Pid); err != nil {
		return nil, err
	}
	// Reap it whenever it ends, so that a dead process shows as gone.
	go func() { _ = p.cmd.Wait() }()
	return p, nil
}

// firstLine waits for the first line the process writes on stdout.
func (p *process) firstLine(ctx context.Context, timeout time.Duration) (string, error) {
	var line string
	err := waitFor(ctx, timeout, 100*time.Millisecond, p.name+" printed nothing", func() error {
		f, err := os.Open(p.stdout)
		if err != nil {
			return err
		}
		defer f.Close()
		r := bufio.NewReader(f)
		l, err := r.ReadString('\n')
		if err != nil {
			return errNotYet
		}
		line = strings.TrimSpace(l)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("%w; its log ends:\n%s", err, p.logTail(20))
	}
	return line, nil
}

// waitReady waits until url (a /readyz) answers 200.
func (p *process) waitReady(ctx context.Context, url string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	err := waitFor(ctx, 30*time.Second, 100*time.Millisecond, p.name+" is not ready", func() error {
		resp, err := client.Get(url)
		if err != nil {
			return errNotYet
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errNotYet
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w; its log ends:\n%s", err, p.logTail(20))
	}
	return nil
}

// logTail is the last n lines of the process's log.
func (p *process) logTail(n int) string {
	return tail(p.logPath, n)
}

func tail(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func recordPIDs(dir, file string, pids ...int) error {
	f, err := os.OpenFile(filepath.Join(dir, file), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, pid := range pids {
		if _, err := fmt.Fprintln(f, pid); err != nil {
			return err
		}
	}
	return nil
}

func readPIDs(dir, file string) ([]int, error) {
	raw, err := os.ReadFile(filepath.Join(dir, file))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(raw)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// stopPIDs ends the processes by their PIDs (never by name): SIGTERM to
// all, then SIGKILL to any still there after ten seconds.
func stopPIDs(pids []int) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// running says whether the state folder records an environment.
func running(dir string) bool {
	for _, f := range []string{clusterPIDs, appPIDs} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// down stops everything the state folder records and removes the folder.
func down(dir string) error {
	apps, err := readPIDs(dir, appPIDs)
	if err != nil {
		return err
	}
	stopPIDs(apps)
	cluster, err := readPIDs(dir, clusterPIDs)
	if err != nil {
		return err
	}
	stopPIDs(cluster)
	return os.RemoveAll(dir)
}
