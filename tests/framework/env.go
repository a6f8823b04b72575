// Package framework assembles the integration test ground: the real test
// cluster, the Metal simulator behind the real SDK client, the join agent, the
// addon's iPXE handler, and the controller itself — in-process, or as the real
// binary for tests that kill it.
package framework

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/controller"
	"github.com/harvester/harvester-equinix-addon/pkg/generated/clientset/versioned"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/harvestercluster"
	"github.com/harvester/harvester-equinix-addon/tests/sim/joinagent"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// Fixed test identities. The token and join token are fake, but tests still
// assert they never leak into objects, Events or logs.
const (
	Namespace        = "harvester-system"
	SecretName       = "equinix-addon"
	MetalToken       = "sim-metal-token-7f3a9c"
	ProjectID        = "11111111-2222-3333-4444-555555555555"
	JoinToken        = "sim-join-token-K9x2Q"
	VIP              = "10.0.0.10"
	HarvesterVersion = "v1.4.1"
)

// Env is one test's world.
type Env struct {
	T       testing.TB
	Ctx     context.Context
	Cluster *cluster.Cluster
	Kube    kubernetes.Interface
	Client  versioned.Interface
	Sim     *metalsim.Simulator
	SimURL  string
	Agent   *joinagent.Agent
	IPXEURL string
	// Identity is the chart's ServiceAccount the controller runs as (nil
	// with Options.ClusterAdmin).
	Identity *Identity
	// Mode is the controller's mode.
	Mode string

	cancel     context.CancelFunc
	ctrlCancel context.CancelFunc
	ctrlDone   chan error
	mu         sync.Mutex
}

// Options tune an Env.
type Options struct {
	// Timings of the simulated devices; zero means FastTimings.
	Timings *metalsim.Timings
	// InstallTime of the join agent (default 300ms).
	InstallTime time.Duration
	// PollInterval of the controller (default 300ms).
	PollInterval time.Duration
	// NoController leaves the controller to the test (e.g. the binary).
	NoController bool
	// NoJoinToken leaves the join token out of the Secret.
	NoJoinToken bool
	// Configure adjusts the controller configuration.
	Configure func(*config.Config)
	// RateLimit makes the simulator send X-RateLimit headers (and answer 429
	// past this many requests per minute per token).
	RateLimit int
	// NoMaintenanceEmulator leaves maintenance requests unanswered, as on a
	// cluster where Harvester never completes them.
	NoMaintenanceEmulator bool
	// ClusterAdmin runs the controller as cluster-admin instead of the
	// chart's ServiceAccount and RBAC.
	ClusterAdmin bool
	// WrapMetal wraps the simulator's handler, for tests that watch or
	// alter the traffic on the wire.
	WrapMetal func(http.Handler) http.Handler
	// KubeletProviderIDPrefix makes the joined Nodes register with a
	// provider ID of their own (see joinagent.Options.ProviderIDPrefix).
	KubeletProviderIDPrefix string
	// ExternalCloudProvider makes the joined Nodes register as kubelets run
	// with --cloud-provider=external (see joinagent.Options).
	ExternalCloudProvider bool
	// OwnedPools runs the hardware mode with the pools of servers you own
	// (--owned-pools), under the chart's RBAC of ownedPools.enabled.
	OwnedPools bool
	// Fencing runs the hardware mode under the chart's RBAC of
	// hardware.fencing.enabled (the flags are Configure's to set).
	Fencing bool
	// NoInventoryCRD leaves the Inventory CRD out: a test plants Seeder's,
	// which Helm then finds and leaves as it is.
	NoInventoryCRD bool
	// Mode is the controller's mode (config.ModeEquinix when empty). The
	// hardware mode runs under the RBAC of the chart's harvester-seeder
	// install, with the Inventory CRD installed.
	Mode string
}

func (o Options) mode() string {
	if o.Mode == "" {
		return config.ModeEquinix
	}
	return o.Mode
}

// FastTimings make devices move in tens of milliseconds: the default
// durations scaled by 1/2000 (a 3-minute iPXE boot takes 90ms).
func FastTimings() metalsim.Timings {
	return metalsim.DefaultTimings().Scale(1.0 / 2000)
}

// New builds the world on the package's shared cluster and starts the
// controller in-process unless opts.NoController.
func New(t testing.TB, shared *cluster.Shared, opts Options) *Env {
	t.Helper()
	c := shared.Require(t)
	if os.Getenv("CI") == "true" && os.Getenv("KUBE_CACHE_MUTATION_DETECTOR") != "true" {
		t.Fatalf("integration tests run with KUBE_CACHE_MUTATION_DETECTOR=true (scripts/test sets it), so that a controller changing a cached object fails them")
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Env{T: t, Ctx: ctx, Cluster: c, cancel: cancel, Mode: opts.mode()}
	t.Cleanup(e.stop)
	var err error
	e.Kube, err = kubernetes.NewForConfig(c.RESTConfig)
	require.NoError(t, err)
	e.Client, err = versioned.NewForConfig(c.RESTConfig)
	require.NoError(t, err)
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	crds := []string{cluster.AddonCRDDir(root), cluster.HarvesterCRDDir(root)}
	if opts.mode() == config.ModeSeeder && !opts.NoInventoryCRD {
		crds = append(crds, cluster.InventoryCRDDir(root))
	}
	require.NoError(t, cluster.InstallCRDs(ctx, c.RESTConfig, crds...))
	e.harvesterCluster(opts)
	switch {
	case opts.ClusterAdmin:
	case opts.OwnedPools || opts.Fencing:
		e.Identity = ChartIdentitySeeder(t, c, opts.OwnedPools, opts.Fencing)
	default:
		e.Identity = ChartIdentityOf(t, c, opts.mode())
	}

	timings := FastTimings()
	if opts.Timings != nil {
		timings = *opts.Timings
	}
	e.Sim = metalsim.New(metalsim.Options{Timings: timings, Seed: 1, RateLimit: opts.RateLimit})
	e.Sim.AddProject(MetalToken, ProjectID)
	handler := e.Sim.Handler()
	if opts.WrapMetal != nil {
		handler = opts.WrapMetal(handler)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	e.SimURL = srv.URL + "/metal/v1"
	go e.Sim.RunTicker(ctx, 20*time.Millisecond)

	ipxe := httptest.NewServer(harvester.NewIPXEHandler())
	t.Cleanup(ipxe.Close)
	e.IPXEURL = ipxe.URL

	install := opts.InstallTime
	if install == 0 {
		install = 300 * time.Millisecond
	}
	e.Agent = joinagent.New(e.Sim, joinagent.Options{
		Kube: e.Kube, Expect: joinagent.Expect{ServerURL: "https://" + VIP + ":443", Token: JoinToken},
		InstallTime: install, HeartbeatInterval: time.Second, ProviderIDPrefix: opts.KubeletProviderIDPrefix,
		ExternalCloudProvider: opts.ExternalCloudProvider,
	})
	e.Agent.Start(ctx)
	if !opts.NoMaintenanceEmulator {
		go e.Agent.EmulateMaintenance(ctx, 100*time.Millisecond)
	}
	if !opts.NoController {
		e.StartController(e.Config(opts))
	}
	return e
}

// Config is the controller configuration the tests use.
func (e *Env) Config(opts Options) *config.Config {
	poll := opts.PollInterval
	if poll == 0 {
		poll = 300 * time.Millisecond
	}
	cfg := &config.Config{
		Mode: opts.mode(), Namespace: Namespace, SecretName: SecretName, Threads: 5,
		MetalAPIURL: e.SimURL, MetalTimeout: 10 * time.Second,
		MetalRequestsPerSecond: 200, MetalBurst: 400,
		JoinTokenSecret: SecretName, JoinTokenKey: "JOIN_TOKEN",
		IPXEPublicURL: e.IPXEURL, IPXEAddress: "127.0.0.1:0",
		PollInterval: poll, OrphanSweepInterval: time.Hour, OrphanGracePeriod: time.Hour, OrphanDryRun: true,
		LeaderLockName:     "harvester-equinix-addon",
		ReplacementBackoff: 200 * time.Millisecond,
		CreateBackoff:      2 * time.Second,
		// The release check runs against a stand-in for the release site,
		// which serves the ISOs of every Harvester v1 release.
		CheckReleaseArtifacts: true,
		ReleaseTransport:      releaseSite{},
		// The VIP's ElasticIP is made only where a test asks for it (the
		// binary, as the chart runs it, makes it by default).
		VIPElasticIP: false, ElasticIPResync: time.Minute,
		BGPLocalASN: 65000, BGPResync: 10 * time.Minute,
	}
	cfg.OwnedPools, cfg.OwnedThreads = opts.OwnedPools, 20
	if opts.Configure != nil {
		opts.Configure(cfg)
	}
	return cfg
}

// harvesterCluster creates what a Harvester cluster has and the addon reads:
// the namespace, the VIP ConfigMap, the server-version Setting, and the
// credentials Secret an operator creates.
func (e *Env) harvesterCluster(opts Options) {
	data := map[string][]byte{"METAL_AUTH_TOKEN": []byte(MetalToken), "PROJECT_ID": []byte(ProjectID)}
	if !opts.NoJoinToken {
		data["JOIN_TOKEN"] = []byte(JoinToken)
	}
	require.NoError(e.T, harvestercluster.Write(e.Ctx, e.Cluster.RESTConfig, harvestercluster.Cluster{
		Namespace: Namespace, VIP: VIP, ServerVersion: HarvesterVersion, SecretName: SecretName, Credentials: data,
	}))
}

// StartController runs the controller in this process until StopController.
func (e *Env) StartController(cfg *config.Config) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := context.WithCancel(e.Ctx)
	e.ctrlCancel = cancel
	e.ctrlDone = make(chan error, 1)
	restConfig := e.Cluster.RESTConfig
	if e.Identity != nil {
		restConfig = e.Identity.RESTConfig
	}
	go func() { e.ctrlDone <- controller.Start(ctx, restConfig, cfg) }()
}

// StopController stops the in-process controller and waits for it.
func (e *Env) StopController() {
	e.mu.Lock()
	cancel, done := e.ctrlCancel, e.ctrlDone
	e.ctrlCancel = nil
	e.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		e.T.Errorf("controller did not stop within 30s")
	}
}

func (e *Env) stop() {
	e.StopController()
	e.cancel()
}

// The controller binary is built once per test binary, into binDir.
var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

// RunMain is cluster.RunMain plus removing the controller binary Binary built
// (about 80 MB) when the test binary ends.
func RunMain(m *testing.M, opts cluster.Options, shared *cluster.Shared) int {
	code := cluster.RunMain(m, opts, shared)
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	return code
}

// Binary returns the path of the freshly built controller binary; packages
// that use it run their tests through RunMain, which removes it.
func Binary(t testing.TB) string {
	buildOnce.Do(func() {
		root, err := cluster.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "hea-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binDir, binPath = dir, filepath.Join(dir, "harvester-equinix-addon")
		buildErr = runCmd(root, "go", "build", "-o", binPath, ".")
	})
	if buildErr != nil {
		t.Fatalf("building the controller: %v", buildErr)
	}
	return binPath
}

func runCmd(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %v: %w\n%s", name, args, err, out)
	}
	return nil
}
