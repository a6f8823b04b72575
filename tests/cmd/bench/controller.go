package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	"k8s.io/apimachinery/pkg/util/wait"
)

// controllerOptions are the flags that differ between scenarios; everything
// else is the production default or fixed below.
type controllerOptions struct {
	threads       int
	pollInterval  time.Duration
	sweepInterval time.Duration
	// requestsPerSecond and burst bound the client-side Metal limiter.
	requestsPerSecond float64
	burst             int
	// kubeQPS and kubeBurst are its client-side apiserver limits.
	kubeQPS   float64
	kubeBurst int
	// extra are flags appended as given (--controller-arg), for profiling
	// (--debug serves pprof) or trying a setting.
	extra []string
	// goMemLimit is the GOMEMLIMIT value, empty for none.
	goMemLimit string
}

// controller is the real addon binary running as a child process.
type controller struct {
	cmd      *exec.Cmd
	httpAddr string
	// ipxeAddr is where its boot endpoint listens (host:port).
	ipxeAddr string
	logPath  string
	exited   chan struct{}
}

// startController runs the binary against metalURL and waits until it
// reports ready (caches synced, handlers registered).
func (e *env) startController(ctx context.Context, name, metalURL string, opts controllerOptions) (*controller, error) {
	httpAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	ipxeAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(e.workDir, "logs", name+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig", e.cluster.Kubeconfig,
		"--namespace", namespace,
		"--secret-name", secretName,
		"--join-token-secret", secretName,
		"--cluster-id", clusterID,
		"--threads", strconv.Itoa(opts.threads),
		"--metal-api-url", metalURL,
		"--metal-requests-per-second", strconv.FormatFloat(opts.requestsPerSecond, 'f', -1, 64),
		"--metal-burst", strconv.Itoa(opts.burst),
		"--kube-api-qps", strconv.FormatFloat(opts.kubeQPS, 'f', -1, 64),
		"--kube-api-burst", strconv.Itoa(opts.kubeBurst),
		"--http-address", httpAddr,
		"--ipxe-address", ipxeAddr,
		"--ipxe-public-url", "http://" + ipxeAddr,
		"--poll-interval", opts.pollInterval.String(),
		"--orphan-sweep-interval", opts.sweepInterval.String(),
		"--leader-elect=false",
		"--log-level", "info",
	}
	args = append(args, opts.extra...)
	cmd := exec.Command(e.binary, args...)
	// Every setting comes from the flags, none from the environment of the
	// machine running the benchmark.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	if opts.goMemLimit != "" {
		cmd.Env = append(cmd.Env, "GOMEMLIMIT="+opts.goMemLimit)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The controller must not outlive an interrupted benchmark.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", e.binary, err)
	}
	c := &controller{cmd: cmd, httpAddr: httpAddr, ipxeAddr: ipxeAddr, logPath: logPath, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(c.exited)
	}()
	if err := c.waitReady(ctx); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

var errExited = errors.New("the controller exited")

func (c *controller) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-c.exited:
			return false, errExited
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.httpAddr+"/readyz", nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the controller to be ready (log: %s): %w", c.logPath, err)
	}
	return nil
}

// scrape reads the controller's /metrics.
func (c *controller) scrape(ctx context.Context) (metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.httpAddr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping the controller's metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping the controller's metrics: HTTP %d", resp.StatusCode)
	}
	return parseMetrics(resp.Body)
}

// memory is the process's resident set now and its peak (VmHWM), in bytes.
func (c *controller) memory() (rss, peak uint64, err error) {
	p, err := procfs.NewProc(c.cmd.Process.Pid)
	if err != nil {
		return 0, 0, fmt.Errorf("reading the controller's /proc entry: %w", err)
	}
	st, err := p.NewStatus()
	if err != nil {
		return 0, 0, fmt.Errorf("reading the controller's /proc status: %w", err)
	}
	return st.VmRSS, st.VmHWM, nil
}

// cpuSeconds is the user and system CPU time the process has used.
func (c *controller) cpuSeconds() (float64, error) {
	p, err := procfs.NewProc(c.cmd.Process.Pid)
	if err != nil {
		return 0, fmt.Errorf("reading the controller's /proc entry: %w", err)
	}
	st, err := p.Stat()
	if err != nil {
		return 0, fmt.Errorf("reading the controller's /proc stat: %w", err)
	}
	return st.CPUTime(), nil
}

// stop asks for a clean shutdown, as a pod stop does, and kills the process
// if it does not exit in time.
func (c *controller) stop() {
	select {
	case <-c.exited:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}
