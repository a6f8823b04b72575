// Command devcluster starts the project's real test cluster (etcd,
// kube-apiserver and kube-controller-manager's garbage collector) detached
// from itself, for `make demo` and `make dev-up`, and stops it again.
//
//	devcluster up   --dir DIR   start; writes DIR/kubeconfig and DIR/pids
//	devcluster down --dir DIR   stop every process recorded in DIR/pids
//	devcluster freeport         print a free loopback TCP port
//	devcluster waithttp URL     wait up to 30s for URL to answer 200
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: devcluster up|down --dir DIR")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	dir := fs.String("dir", ".cache/dev", "state folder")
	_ = fs.Parse(os.Args[2:])
	var err error
	switch os.Args[1] {
	case "up":
		err = up(*dir)
	case "down":
		err = down(*dir)
	case "freeport":
		err = freeport()
	case "waithttp":
		err = waitHTTP(fs.Args())
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		os.Exit(1)
	}
}

func up(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(abs, "pids")); err == nil {
		return errors.New("a cluster is already running from " + abs + "; run `devcluster down` first")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Options{
		Dir: filepath.Join(abs, "cluster"), Detach: true, ControllerManager: true,
		Log: func(f string, a ...interface{}) { fmt.Fprintf(os.Stderr, "devcluster: "+f+"\n", a...) },
	})
	if err != nil {
		return err
	}
	var pids []string
	for _, p := range c.PIDs() {
		pids = append(pids, strconv.Itoa(p))
	}
	if err := os.WriteFile(filepath.Join(abs, "pids"), []byte(strings.Join(pids, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	kc := filepath.Join(abs, "kubeconfig")
	raw, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		return err
	}
	if err := os.WriteFile(kc, raw, 0o600); err != nil {
		return err
	}
	fmt.Println(kc)
	return nil
}

func down(dir string) error {
	raw, err := os.ReadFile(filepath.Join(dir, "pids"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, f := range strings.Fields(string(raw)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		stop(pid)
	}
	return os.RemoveAll(dir)
}

// stop ends a process by its PID (never by name): SIGTERM, then SIGKILL.
func stop(pid int) {
	if syscall.Kill(pid, syscall.SIGTERM) != nil {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

func freeport() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	fmt.Println(l.Addr().(*net.TCPAddr).Port)
	return nil
}

func waitHTTP(args []string) error {
	if len(args) != 1 {
		return errors.New("waithttp needs one URL")
	}
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := client.Get(args[0])
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer 200 within 30s", args[0])
}
