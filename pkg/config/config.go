// Package config turns raw command-line values into a validated Config.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/labels"
)

// DefaultMetalAPIURL is the Equinix Metal API base. The SDK appends operation paths
// to it, so it must end in /metal/v1.
const DefaultMetalAPIURL = "https://api.equinix.com/metal/v1"

// Modes of the controller (--mode): which chains it runs.
const (
	// ModeEquinix runs the Equinix Metal chains: pools, Instances,
	// ElasticIPs, BGP, and the hardware chain of the addon's own servers.
	ModeEquinix = "equinix"
	// ModeSeeder does Harvester Seeder's job for servers the addon did not
	// provision, through Seeder's Inventory kind (and, with --owned-pools,
	// runs the pools of servers people own): what the chart runs when
	// installed as the harvester-seeder Addon. It needs no Metal
	// credentials.
	ModeSeeder = "seeder"
	// DeprecatedModeHardware is the seeder mode's former name. Validate
	// still takes it, as ModeSeeder with a warning, so that the Addons
	// whose valuesContent says mode: hardware keep working.
	DeprecatedModeHardware = "hardware"
)

// Config is the controller configuration. The command line fills it (each
// flag's Destination is a field here) and Validate checks and normalizes it.
type Config struct {
	// Mode is ModeEquinix or ModeSeeder (Validate turns the deprecated
	// name into ModeSeeder).
	Mode           string
	Kubeconfig     string
	Namespace      string
	SecretName     string
	Threads        int
	MetalAPIURL    string
	HTTPAddress    string
	LeaderElect    bool
	LeaderLockName string
	// LogLevelName is the --log-level as given; LogLevel is what Validate
	// made of it.
	LogLevelName string
	LogLevel     logrus.Level
	LogFormat    string
	Debug        bool
	MetalTimeout time.Duration

	// MetalRequestsPerSecond and MetalBurst bound the calls to one Metal project,
	// shared by every worker, so a large pool stays under the API's limits.
	MetalRequestsPerSecond float64
	MetalBurst             int
	// KubeAPIQPS and KubeAPIBurst are client-go's client-side limit on
	// kube-apiserver requests: one token bucket shared by every controller's
	// client (one lasso factory), another by the plain clientset (Events,
	// leader election, drain). client-go's own default
	// (5/s) made status writes, not Metal or the controller, the bottleneck of
	// a large pool (make bench); the apiserver protects itself with API
	// Priority and Fairness.
	KubeAPIQPS   float64
	KubeAPIBurst int
	// ClusterID tags every device, VLAN and IP the addon creates; empty means the
	// UID of the kube-system namespace, which is stable for a cluster's life.
	ClusterID string
	// ClusterURL is the join URL given explicitly; empty means discovered from
	// ConfigMap <namespace>/vip.
	ClusterURL string
	// JoinTokenSecret/JoinTokenKey locate the cluster join token.
	JoinTokenSecret string
	JoinTokenKey    string
	// RancherdConfig is an optional path to rancherd's config.yaml (mounted from
	// the host when the chart's joinToken.fromHost is on), the token's fallback.
	RancherdConfig string
	// IPXEAddress serves the installer iPXE scripts; IPXEPublicURL is the base URL
	// servers use to fetch them. Empty IPXEPublicURL with IPXENodePort set means
	// http://<VIP>:<IPXENodePort>.
	IPXEAddress   string
	IPXEPublicURL string
	IPXENodePort  int
	// ArtifactsMirror, when set, is a copy of releases.rancher.com/harvester
	// the installer scripts boot a release's kernel, initrd and rootfs from
	// (air-gapped sites); empty means the official locations.
	ArtifactsMirror string
	// BootLoadersDir holds the boot loaders (iPXE's builds, ISOLINUX) the
	// boot endpoint puts in a claim's virtual media image; a folder that
	// does not exist means the endpoint serves no images.
	BootLoadersDir string
	// PollInterval is how often a server in a waiting state is polled.
	PollInterval time.Duration
	// Orphan sweep: devices tagged with ClusterID that no Instance claims.
	OrphanSweepInterval time.Duration
	OrphanGracePeriod   time.Duration
	OrphanDryRun        bool
	// ReplacementBackoff is the first wait before a server that failed to join
	// is replaced; it doubles with each failure in a row, up to 10 minutes.
	ReplacementBackoff time.Duration
	// CreateBackoff is the first wait after Equinix Metal refused a device
	// create (no capacity, an invalid request); it doubles with each refusal
	// in a row, up to 30 minutes.
	CreateBackoff time.Duration
	// CheckReleaseArtifacts asks for the Harvester release's ISO (HTTP HEAD)
	// before a server is created for it: a version with no artifacts would
	// only fail at the startup timeout, after a paid server ran for nothing.
	CheckReleaseArtifacts bool
	// ReleaseTransport, when set, carries those checks (tests; proxies come
	// from the environment otherwise).
	ReleaseTransport http.RoundTripper

	// VIPElasticIP makes the addon create the ElasticIP of the cluster VIP
	// when the VIP lies in a reservation of the project.
	VIPElasticIP bool
	// ElasticIPResync is how often an ElasticIP at rest is checked against
	// Equinix Metal (one read of its reservation): what notices an
	// assignment changed by someone else.
	ElasticIPResync time.Duration
	// BGP turns on BGP peering for kube-vip and load balancers: the
	// project's BGP config, a session per server and the Equinix CCM's
	// node annotations.
	BGP bool
	// BGPLocalASN is the ASN the project's BGP config is requested with
	// when it has none.
	BGPLocalASN int64
	// BGPResync is how often a node's session is checked at rest.
	BGPResync time.Duration
	// BGPNodeSelector is a label selector: only the Nodes it matches get a
	// session and the annotations (the CCM's bgpNodeSelector); empty means
	// every Node.
	BGPNodeSelector string
	// InitializeNodes makes the addon the cloud provider of Nodes whose
	// kubelets run with --cloud-provider=external and that no cloud
	// controller initialized: their addresses, as the Equinix CCM sets
	// them, their provider ID, and the uninitialized taint removed.
	InitializeNodes bool
	// DeviceEventsInterval is how often each Metal project's event log is
	// read and its devices' new events forwarded; 0 turns it off.
	DeviceEventsInterval time.Duration
	// TerminationCheckInterval is how often a Metal project with spot
	// servers is asked which devices it will take back; 0 turns it off.
	TerminationCheckInterval time.Duration
	// BMCTimeout bounds one request to the BMC of an Inventory; 0 is the
	// BMC client's default.
	BMCTimeout time.Duration
	// BMCPowerFreshness is how old the power an Inventory shows may get
	// between its polls: a read of the power alone, at the least cost to
	// the BMC, once it is older; 0 leaves it to the polls.
	BMCPowerFreshness time.Duration
	// OwnedPools makes the seeder mode run the InstancePools of servers
	// people own (spec.servers): their pools and Instances, which claim
	// Inventories and boot them through their BMCs.
	OwnedPools bool
	// OwnedThreads is how many Instances of servers people own are
	// handled at once (the Instance controller's workers with OwnedPools).
	OwnedThreads int
	// Fencing (--mode hardware only) switches off, through its BMC, the
	// server of a node that stayed NotReady for FencingGracePeriod, and
	// then taints its Node out-of-service, so that its volumes are released
	// and its VMs start elsewhere. At most FencingMaxFenced nodes are
	// fenced at once. FencingPowerOn has the addon switch a fenced server
	// back on once its volumes are detached; without it a person does.
	Fencing            bool
	FencingMaxFenced   int
	FencingGracePeriod time.Duration
	FencingPowerOn     bool
	// NodeName is the node the controller runs on (NODE_NAME, from the
	// downward API): never fenced, and its readiness is one of fencing's
	// guards.
	NodeName string
	// PodIP is the controller's pod IP (POD_IP, from the downward API):
	// with OwnedPools, where the other replicas forward boot requests to
	// while this one leads. Empty means the IP of IPXEAddress, if it names one.
	PodIP string
	// SeederCheckInterval is how often the seeder mode looks for
	// Harvester's own Seeder; 0 means a minute. No flag sets it: tests do.
	SeederCheckInterval time.Duration

	// Warnings are what Validate accepted but a person should change (a
	// deprecated name); the application logs them.
	Warnings []string
}

// Validate checks the configuration and normalizes it (trailing slashes, the
// log level). Every problem is reported at once so a user fixes them in one
// pass.
func (cfg *Config) Validate() error {
	var errs []error
	switch cfg.Mode {
	case ModeEquinix, ModeSeeder:
	case DeprecatedModeHardware:
		cfg.Mode = ModeSeeder
		cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("--mode %s is the former name of --mode %s, which it runs; say %s (the chart's mode: %s) instead",
			DeprecatedModeHardware, ModeSeeder, ModeSeeder, ModeSeeder))
	default:
		errs = append(errs, fmt.Errorf("--mode must be %s or %s, got %q", ModeEquinix, ModeSeeder, cfg.Mode))
	}
	if cfg.OwnedPools && cfg.Mode != ModeSeeder {
		errs = append(errs, fmt.Errorf("--owned-pools needs --mode %s: the pools of servers people own are run by the install that holds their BMCs' sessions", ModeSeeder))
	}
	cfg.MetalAPIURL = strings.TrimRight(cfg.MetalAPIURL, "/")
	cfg.ClusterURL = strings.TrimRight(cfg.ClusterURL, "/")
	cfg.IPXEPublicURL = strings.TrimRight(cfg.IPXEPublicURL, "/")
	if cfg.Namespace == "" {
		errs = append(errs, errors.New("--namespace must not be empty"))
	}
	if cfg.SecretName == "" {
		errs = append(errs, errors.New("--secret-name must not be empty"))
	}
	if cfg.Threads < 1 || cfg.Threads > 100 {
		errs = append(errs, fmt.Errorf("--threads must be between 1 and 100, got %d", cfg.Threads))
	}
	if cfg.OwnedPools && (cfg.OwnedThreads < 1 || cfg.OwnedThreads > 200) {
		errs = append(errs, fmt.Errorf("--owned-threads must be between 1 and 200, got %d", cfg.OwnedThreads))
	}
	if err := validateMetalURL(cfg.MetalAPIURL); err != nil {
		errs = append(errs, err)
	}
	if _, _, err := net.SplitHostPort(cfg.HTTPAddress); err != nil {
		errs = append(errs, fmt.Errorf("--http-address %q: %w", cfg.HTTPAddress, err))
	}
	if cfg.LeaderLockName == "" {
		errs = append(errs, errors.New("--leader-lock-name must not be empty"))
	}
	if cfg.MetalTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--metal-timeout must be positive, got %s", cfg.MetalTimeout))
	}
	if cfg.MetalRequestsPerSecond <= 0 || cfg.MetalBurst < 1 {
		errs = append(errs, fmt.Errorf("--metal-requests-per-second must be positive and --metal-burst at least 1"))
	}
	if cfg.KubeAPIQPS <= 0 || cfg.KubeAPIBurst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-qps must be positive and --kube-api-burst at least 1"))
	}
	if cfg.ClusterURL != "" {
		if u, err := url.Parse(cfg.ClusterURL); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("--cluster-url %q must be an https URL such as https://<VIP>:443", cfg.ClusterURL))
		}
	}
	if cfg.JoinTokenSecret == "" || cfg.JoinTokenKey == "" {
		errs = append(errs, errors.New("--join-token-secret and --join-token-key must not be empty"))
	}
	if _, _, err := net.SplitHostPort(cfg.IPXEAddress); err != nil {
		errs = append(errs, fmt.Errorf("--ipxe-address %q: %w", cfg.IPXEAddress, err))
	}
	if cfg.IPXEPublicURL != "" {
		if u, err := url.Parse(cfg.IPXEPublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--ipxe-public-url %q must be an http(s) URL", cfg.IPXEPublicURL))
		}
	}
	if cfg.ArtifactsMirror != "" {
		// The same rule as harvester.ValidateMirror, which this leaf
		// package does not import: file names are appended to the URL.
		if u, err := url.Parse(cfg.ArtifactsMirror); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			errs = append(errs, fmt.Errorf("--artifacts-mirror %q must be an http(s) URL without query or fragment", cfg.ArtifactsMirror))
		}
	}
	if cfg.IPXENodePort < 0 || cfg.IPXENodePort > 65535 {
		errs = append(errs, fmt.Errorf("--ipxe-node-port %d out of range", cfg.IPXENodePort))
	}
	if cfg.PollInterval < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("--poll-interval must be at least 100ms, got %s", cfg.PollInterval))
	}
	if cfg.OrphanSweepInterval < 100*time.Millisecond || cfg.OrphanGracePeriod < 0 {
		errs = append(errs, fmt.Errorf("--orphan-sweep-interval must be at least 100ms and --orphan-grace-period not negative"))
	}
	if cfg.ReplacementBackoff < 0 {
		errs = append(errs, fmt.Errorf("--replacement-backoff must not be negative"))
	}
	if cfg.DeviceEventsInterval < 0 || (cfg.DeviceEventsInterval > 0 && cfg.DeviceEventsInterval < 100*time.Millisecond) {
		errs = append(errs, fmt.Errorf("--device-events-interval must be 0 (off) or at least 100ms, got %s", cfg.DeviceEventsInterval))
	}
	if cfg.BMCPowerFreshness < 0 {
		errs = append(errs, fmt.Errorf("--bmc-power-freshness must not be negative, got %s", cfg.BMCPowerFreshness))
	}
	if cfg.BMCTimeout < 0 {
		errs = append(errs, fmt.Errorf("--bmc-timeout must not be negative, got %s", cfg.BMCTimeout))
	}
	errs = append(errs, cfg.validateFencing()...)
	if cfg.TerminationCheckInterval < 0 || (cfg.TerminationCheckInterval > 0 && cfg.TerminationCheckInterval < 100*time.Millisecond) {
		errs = append(errs, fmt.Errorf("--termination-check-interval must be 0 (off) or at least 100ms, got %s", cfg.TerminationCheckInterval))
	}
	if cfg.CreateBackoff < time.Second {
		errs = append(errs, fmt.Errorf("--create-backoff must be at least 1s, got %s", cfg.CreateBackoff))
	}
	if cfg.ElasticIPResync < time.Second {
		errs = append(errs, fmt.Errorf("--elastic-ip-resync-interval must be at least 1s, got %s", cfg.ElasticIPResync))
	}
	if cfg.BGPLocalASN < 1 || cfg.BGPLocalASN > 4294967295 {
		errs = append(errs, fmt.Errorf("--bgp-local-asn must be between 1 and 4294967295, got %d", cfg.BGPLocalASN))
	}
	if cfg.BGPResync < time.Second {
		errs = append(errs, fmt.Errorf("--bgp-resync-interval must be at least 1s, got %s", cfg.BGPResync))
	}
	if _, err := labels.Parse(cfg.BGPNodeSelector); err != nil {
		errs = append(errs, fmt.Errorf("--bgp-node-selector: %w", err))
	}
	level, err := logrus.ParseLevel(cfg.LogLevelName)
	if err != nil {
		errs = append(errs, fmt.Errorf("--log-level: %w", err))
	}
	cfg.LogLevel = level
	if cfg.Debug {
		cfg.LogLevel = logrus.DebugLevel
	}
	switch cfg.LogFormat {
	case "text", "json":
	default:
		errs = append(errs, fmt.Errorf("--log-format must be text or json, got %q", cfg.LogFormat))
	}
	return errors.Join(errs...)
}

func validateMetalURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("--metal-api-url %q: %w", raw, err)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return fmt.Errorf("--metal-api-url %q: scheme must be https (or http for a local simulator)", raw)
	}
	if u.Host == "" {
		return fmt.Errorf("--metal-api-url %q: no host", raw)
	}
	if !strings.HasSuffix(u.Path, "/metal/v1") {
		return fmt.Errorf("--metal-api-url %q: must end in /metal/v1, where the SDK appends operation paths", raw)
	}
	return nil
}

// validateFencing checks the fencing settings: they act only in the
// seeder mode, and only with the controller's own node known, which is
// never fenced.
func (cfg *Config) validateFencing() []error {
	if !cfg.Fencing {
		return nil
	}
	var errs []error
	if cfg.Mode != ModeSeeder {
		errs = append(errs, fmt.Errorf("--fencing needs --mode %s: only nodes with an Inventory (a BMC) are fenced", ModeSeeder))
	}
	if cfg.FencingMaxFenced < 1 {
		errs = append(errs, fmt.Errorf("--fencing-max-fenced must be at least 1, got %d", cfg.FencingMaxFenced))
	}
	if cfg.FencingGracePeriod < time.Second {
		errs = append(errs, fmt.Errorf("--fencing-grace-period must be at least 1s, got %s", cfg.FencingGracePeriod))
	}
	if strings.TrimSpace(cfg.NodeName) == "" {
		errs = append(errs, errors.New("--fencing needs --node-name (NODE_NAME, the pod's spec.nodeName from the downward API): "+
			"the controller's own node is never fenced"))
	}
	return errs
}
