// Package cluster runs a real etcd + kube-apiserver (and, when asked, the
// garbage-collecting parts of kube-controller-manager) on loopback for tests,
// the demo and the local development environment. The binaries are built from
// the Go module proxy by scripts/cluster-binaries.
package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Versions the binaries must report; scripts/versions is the source of truth and
// TestVersionsMatchScripts keeps the two in step.
const (
	KubeVersion = "v1.36.3"
	EtcdVersion = "v3.6.16"
)

// Options tune a cluster.
type Options struct {
	// BinDir holds kube-apiserver, etcd, kubectl and kube-controller-manager.
	// Default: BinDir().
	BinDir string
	// Dir receives certificates, data and logs. Default: a new temporary folder
	// that Stop removes.
	Dir string
	// ControllerManager also runs kube-controller-manager's garbage collector and
	// namespace controllers, for tests that rely on ownerReference cascading.
	ControllerManager bool
	// AuditLog makes the apiserver write an audit log of every request's
	// metadata (who, verb, resource), read back with AuditEvents.
	AuditLog bool
	// Detach starts the processes in their own process group and does not tie
	// them to this process's life, for `make dev-up`.
	Detach bool
	// Log receives progress lines; nil discards them.
	Log func(format string, args ...interface{})
}

// Cluster is a running test cluster.
type Cluster struct {
	opts       Options
	dir        string
	ownDir     bool
	pki        *pki
	etcdURL    string
	apiPort    int
	Kubeconfig string
	RESTConfig *rest.Config

	mu        sync.Mutex
	etcd      *process
	apiserver *process
	kcm       *process
}

// ToolsCache mirrors scripts/versions: $HEA_TOOLS_CACHE, else the user's
// cache folder.
func ToolsCache() string {
	if cache := os.Getenv("HEA_TOOLS_CACHE"); cache != "" {
		return cache
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "harvester-equinix-addon")
}

// DefaultBinDir is where scripts/cluster-binaries puts the cluster binaries.
func DefaultBinDir() string {
	if d := os.Getenv("KUBE_BIN_DIR"); d != "" {
		return d
	}
	return filepath.Join(ToolsCache(), "k8s-"+KubeVersion+"-etcd-"+EtcdVersion, "bin")
}

// HelmBinDir is where scripts/tools puts helm version.
func HelmBinDir(version string) string {
	if d := os.Getenv("HELM_BIN_DIR"); d != "" {
		return d
	}
	return filepath.Join(ToolsCache(), "helm-"+version, "bin")
}

// ErrNoBinaries says the cluster binaries have not been built.
var ErrNoBinaries = errors.New("cluster binaries not found: run scripts/cluster-binaries (make test does)")

// CheckBinaries reports whether every binary is present in dir.
func CheckBinaries(dir string) error {
	for _, b := range []string{"kube-apiserver", "etcd", "kube-controller-manager", "kubectl"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return fmt.Errorf("%w (missing %s)", ErrNoBinaries, filepath.Join(dir, b))
		}
	}
	return nil
}

// Start brings up etcd and kube-apiserver and waits until the apiserver is ready.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.BinDir == "" {
		opts.BinDir = DefaultBinDir()
	}
	if opts.Log == nil {
		opts.Log = func(string, ...interface{}) {}
	}
	if err := CheckBinaries(opts.BinDir); err != nil {
		return nil, err
	}
	c := &Cluster{opts: opts, dir: opts.Dir}
	if c.dir == "" {
		d, err := os.MkdirTemp("", "hea-cluster-")
		if err != nil {
			return nil, err
		}
		c.dir, c.ownDir = d, true
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, err
	}
	var err error
	if c.pki, err = generatePKI(c.dir); err != nil {
		return nil, fmt.Errorf("generating certificates: %w", err)
	}
	if err := c.startEtcd(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	if err := c.startAPIServer(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	if err := c.writeKubeconfig(); err != nil {
		c.Stop()
		return nil, err
	}
	if opts.ControllerManager {
		if err := c.startControllerManager(ctx); err != nil {
			c.Stop()
			return nil, err
		}
	}
	return c, nil
}

// Dir is where the cluster keeps its files and logs.
func (c *Cluster) Dir() string { return c.dir }

// APIServerURL is the https URL of the apiserver.
func (c *Cluster) APIServerURL() string { return "https://127.0.0.1:" + strconv.Itoa(c.apiPort) }

func (c *Cluster) startEtcd(ctx context.Context) error {
	return retryPorts(3, func() error {
		client, peer, err := freePorts2()
		if err != nil {
			return err
		}
		c.etcdURL = "http://127.0.0.1:" + strconv.Itoa(client)
		peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
		dataDir := filepath.Join(c.dir, "etcd-data")
		_ = os.RemoveAll(dataDir)
		p, err := c.spawn("etcd",
			"--name=default", "--data-dir="+dataDir,
			"--listen-client-urls="+c.etcdURL, "--advertise-client-urls="+c.etcdURL,
			"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
			"--initial-cluster=default="+peerURL, "--unsafe-no-fsync", "--log-level=warn",
		)
		if err != nil {
			return err
		}
		c.etcd = p
		if err := waitHTTP(ctx, p, &http.Client{Timeout: 2 * time.Second}, c.etcdURL+"/health", 30*time.Second); err != nil {
			p.stop()
			return fmt.Errorf("etcd: %w\n%s", err, p.logTail())
		}
		c.opts.Log("etcd ready at %s", c.etcdURL)
		return nil
	})
}

func (c *Cluster) startAPIServer(ctx context.Context) error {
	return retryPorts(3, func() error {
		if c.apiPort == 0 {
			port, err := freePort()
			if err != nil {
				return err
			}
			c.apiPort = port
		}
		args := []string{
			"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(c.apiPort),
			"--etcd-servers=" + c.etcdURL,
			"--tls-cert-file=" + c.pki.servingCert, "--tls-private-key-file=" + c.pki.servKey,
			"--client-ca-file=" + c.pki.caCert,
			"--service-account-key-file=" + c.pki.saPublic,
			"--service-account-signing-key-file=" + c.pki.saPrivate,
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-cluster-ip-range=10.0.0.0/24",
			"--authorization-mode=RBAC",
			"--endpoint-reconciler-type=none",
			"--allow-privileged=true",
			"--profiling=false",
		}
		if c.opts.AuditLog {
			audit, err := c.auditArgs()
			if err != nil {
				return err
			}
			args = append(args, audit...)
		}
		p, err := c.spawn("kube-apiserver", args...)
		if err != nil {
			return err
		}
		c.apiserver = p
		if err := waitHTTP(ctx, p, c.adminHTTPClient(), c.APIServerURL()+"/readyz", 60*time.Second); err != nil {
			p.stop()
			c.apiPort = 0
			return fmt.Errorf("kube-apiserver: %w\n%s", err, p.logTail())
		}
		c.opts.Log("kube-apiserver ready at %s", c.APIServerURL())
		return nil
	})
}

func (c *Cluster) startControllerManager(ctx context.Context) error {
	p, err := c.spawn("kube-controller-manager",
		"--kubeconfig="+c.Kubeconfig,
		// Only what tests rely on: cascading deletion of owned objects and namespace
		// cleanup. The node-lifecycle controller stays off, or it would mark the
		// API-created Nodes Unknown.
		"--controllers=garbage-collector-controller,namespace-controller,serviceaccount-controller,serviceaccount-token-controller",
		"--service-account-private-key-file="+c.pki.saPrivate,
		"--root-ca-file="+c.pki.caCert,
		"--bind-address=127.0.0.1", "--secure-port=0",
		"--leader-elect=false",
	)
	if err != nil {
		return err
	}
	c.kcm = p
	// Its ServiceAccount controller makes each namespace's default
	// ServiceAccount, without which no Pod is admitted: once the one in
	// namespace default exists, the controllers tests rely on are running.
	sa := c.APIServerURL() + "/api/v1/namespaces/default/serviceaccounts/default"
	if err := waitHTTP(ctx, p, c.adminHTTPClient(), sa, 60*time.Second); err != nil {
		return fmt.Errorf("kube-controller-manager: %w\n%s", err, p.logTail())
	}
	c.opts.Log("kube-controller-manager started")
	return nil
}

// RestartAPIServer stops kube-apiserver and starts it again on the same port,
// as an apiserver restart or upgrade does to a controller.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.apiserver != nil {
		c.apiserver.stop()
	}
	return c.startAPIServer(ctx)
}

// StopAPIServer stops kube-apiserver only (StartAPIServer brings it back).
func (c *Cluster) StopAPIServer() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.apiserver != nil {
		c.apiserver.stop()
		c.apiserver = nil
	}
}

// StartAPIServer starts a stopped kube-apiserver on its old port.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.startAPIServer(ctx)
}

// Stop ends every process and removes the temporary folder it created.
func (c *Cluster) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range []*process{c.kcm, c.apiserver, c.etcd} {
		if p != nil {
			p.stop()
		}
	}
	if c.ownDir && os.Getenv("HEA_KEEP_CLUSTER_DIR") == "" {
		_ = os.RemoveAll(c.dir)
	}
}

// PIDs of the running processes, for `make dev-down`.
func (c *Cluster) PIDs() []int {
	var pids []int
	for _, p := range []*process{c.kcm, c.apiserver, c.etcd} {
		if p != nil && p.cmd.Process != nil {
			pids = append(pids, p.cmd.Process.Pid)
		}
	}
	return pids
}

func (c *Cluster) adminTLS() *tls.Config {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.pki.caPEM)
	cert, err := tls.X509KeyPair(c.pki.adminCertPEM, c.pki.adminKeyPEM)
	if err != nil {
		// The pair was generated a moment ago by this package; failing to load it is
		// a programming error.
		panic(err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}

func (c *Cluster) adminHTTPClient() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: c.adminTLS()}}
}
