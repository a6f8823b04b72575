// Package harvesterapi runs Harvester's own node action handler (the code of
// the github.com/harvester/harvester version go.mod pins, built by
// scripts/harvester-node-api from tests/harvesternodeapi) against a test
// cluster, so that tests press the power buttons of the Harvester UI through
// the very code a Harvester cluster runs: powerActionPossible, powerAction
// and the actions a node offers.
package harvesterapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/upstream"
)

// binaryName is what scripts/harvester-node-api builds.
const binaryName = "harvester-node-api"

// Binary returns the built handler, or ends the test the way
// cluster.Shared.Require does: a failure under CI=true, a skip otherwise.
// HARVESTER_NODE_API_BIN_DIR (set by scripts/test) names its folder; the
// default is the tools cache folder of the Harvester version go.mod pins. A
// binary built from another main.go or Harvester version counts as missing.
func Binary(t testing.TB) string {
	t.Helper()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	version, err := upstream.GoModVersion(root, upstream.HarvesterModule)
	require.NoError(t, err)
	dir := os.Getenv("HARVESTER_NODE_API_BIN_DIR")
	if dir == "" {
		dir = filepath.Join(cluster.ToolsCache(), binaryName+"-"+version, "bin")
	}
	bin := filepath.Join(dir, binaryName)
	want, err := expectedVersion(root, version)
	require.NoError(t, err)
	out, err := exec.Command(bin, "-version").Output()
	if got := strings.TrimSpace(string(out)); err != nil || got != want {
		msg := fmt.Sprintf("%s is missing or stale (reports %q, %v; want %q); scripts/harvester-node-api builds it (`make test` runs it)", bin, got, err, want)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// expectedVersion is what a current binary reports: the Harvester version
// and the hash of the main.go it was built from, as the build script puts it.
func expectedVersion(root, version string) (string, error) {
	src, err := os.ReadFile(filepath.Join(root, "tests", "harvesternodeapi", "main.go"))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(src)
	return fmt.Sprintf("%s %s source %s", upstream.HarvesterModule, version, hex.EncodeToString(sum[:])[:16]), nil
}

// InstallCRDs installs what the handler's caches and calls need: Harvester's
// own Addon CRD (from its module), stand-ins for the KubeVirt and Longhorn
// kinds it caches, and the addon's Inventory CRD.
func InstallCRDs(ctx context.Context, t testing.TB, c *cluster.Cluster) {
	t.Helper()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	addons, err := upstream.HarvesterCRD(root, "harvesterhci.io_addons.yaml")
	require.NoError(t, err)
	harvester := t.TempDir()
	raw, err := os.ReadFile(addons)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(harvester, filepath.Base(addons)), raw, 0o600))
	standIns := filepath.Join(root, "tests", "harvesterapi", "testdata", "crds")
	require.NoError(t, cluster.InstallCRDs(ctx, c.RESTConfig, harvester, standIns, cluster.InventoryCRDDir(root)))
}

// Server is a running handler.
type Server struct {
	URL string
	log string
}

// Start runs the handler against the cluster (its CRDs installed first, see
// InstallCRDs) and waits until it serves; it stops with the test.
func Start(t testing.TB, c *cluster.Cluster) *Server {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	addrFile := filepath.Join(dir, "addr")
	logPath := filepath.Join(dir, "harvester-node-api.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(bin, "-kube", c.Kubeconfig, "-listen", "127.0.0.1:0", "-addr-file", addrFile)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var s *Server
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = logFile.Close()
	})
	s = &Server{log: logPath}
	// It writes its address once its caches have synced: about a second,
	// never while a CRD its caches need is missing.
	require.Eventually(t, func() bool {
		select {
		case err := <-exited:
			exited <- err
			return true
		default:
		}
		addr, err := os.ReadFile(addrFile)
		if err != nil {
			return false
		}
		s.URL = "http://" + string(addr)
		return true
	}, 2*time.Minute, 100*time.Millisecond, "the handler never served; its log:\n%s", s.Log())
	select {
	case err := <-exited:
		t.Fatalf("the handler exited (%v); its log:\n%s", err, s.Log())
	default:
	}
	// Steve loads its schemas, the node's among them, some 10-15 s after
	// the caches synced; until then every node call answers 404.
	require.Eventually(t, func() bool {
		req, err := http.NewRequest(http.MethodGet, s.URL+"/v1/schemas/node", nil)
		require.NoError(t, err)
		r, err := do(req)
		return err == nil && r.Status == http.StatusOK && strings.Contains(r.Body, "powerActionPossible")
	}, 2*time.Minute, 200*time.Millisecond, "the handler never served the node schema; its log:\n%s", s.Log())
	return s
}

// Log is the handler's output so far.
func (s *Server) Log() string {
	raw, _ := os.ReadFile(s.log)
	return string(raw)
}

// Response is a handler's answer.
type Response struct {
	Status int
	Body   string
}

func (r Response) String() string { return fmt.Sprintf("%d %s", r.Status, r.Body) }

// PowerActionPossible is the UI's first call before a power action.
func (s *Server) PowerActionPossible(ctx context.Context, node string) (Response, error) {
	return s.action(ctx, node, "powerActionPossible", nil)
}

// PowerAction asks for a power operation (shutdown, poweron or reboot), as
// the host's power menu does.
func (s *Server) PowerAction(ctx context.Context, node, operation string) (Response, error) {
	return s.action(ctx, node, "powerAction", map[string]string{"operation": operation})
}

func (s *Server) action(ctx context.Context, node, action string, input interface{}) (Response, error) {
	var body io.Reader
	if input != nil {
		raw, err := json.Marshal(input)
		if err != nil {
			return Response{}, err
		}
		body = bytes.NewReader(raw)
	}
	u := s.URL + "/v1/nodes/" + url.PathEscape(node) + "?action=" + url.QueryEscape(action)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, body)
	if err != nil {
		return Response{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	return do(req)
}

// NodeActions are the actions the node's resource offers, sorted: the UI
// shows a button only for an action offered here (powerAction only while the
// node is in maintenance mode).
func (s *Server) NodeActions(ctx context.Context, node string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/v1/nodes/"+url.PathEscape(node), nil)
	if err != nil {
		return nil, err
	}
	resp, err := do(req)
	if err != nil {
		return nil, err
	}
	if resp.Status != http.StatusOK {
		return nil, fmt.Errorf("GET node %s: %s", node, resp)
	}
	var obj struct {
		Actions map[string]string `json:"actions"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &obj); err != nil {
		return nil, fmt.Errorf("GET node %s: %w", node, err)
	}
	actions := make([]string, 0, len(obj.Actions))
	for a := range obj.Actions {
		actions = append(actions, a)
	}
	sort.Strings(actions)
	return actions, nil
}

func do(req *http.Request) (Response, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return Response{}, err
	}
	return Response{Status: resp.StatusCode, Body: strings.TrimSpace(string(raw))}, nil
}
