// Package app is the command line: flags (each mirrored by an environment
// variable) parsed into a config.Config, validated, then handed to the server.
package app

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/server"
	"github.com/harvester/harvester-equinix-addon/pkg/version"
)

// Run executes the command line and returns the process exit code.
func Run(args []string) int {
	if err := New().Run(args); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}

// New builds the cli application.
func New() *cli.App {
	var cfg config.Config
	app := &cli.App{
		Name:    "harvester-equinix-addon",
		Usage:   "provision pools of Equinix Metal servers that install Harvester and join this cluster",
		Version: version.FriendlyVersion(),
		Flags:   controllerFlags(&cfg),
		Action: func(c *cli.Context) error {
			if err := flagsOnly(c); err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			setupLogging(&cfg)
			for _, w := range cfg.Warnings {
				logrus.Warn(w)
			}
			ctx, cancel := signalContext(c.Context)
			defer cancel()
			return server.Run(ctx, &cfg)
		},
	}
	return app
}

// flagsOnly refuses positional arguments. The controller has no subcommands,
// and without this a mistyped or retired one (the Metal simulator used to be
// `harvester-equinix-addon simulator`) would start a controller instead.
func flagsOnly(c *cli.Context) error {
	if c.NArg() == 0 {
		return nil
	}
	// The arguments are not echoed: a value given to the wrong flag could be
	// one that must never be printed.
	return fmt.Errorf("%d unexpected argument(s): the controller takes flags only "+
		"(the Metal simulator is the separate command harvester-equinix-addon-simulator, built from tests/cmd/simulator)", c.NArg())
}

func controllerFlags(f *config.Config) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "mode", EnvVars: []string{"MODE"}, Value: config.ModeEquinix, Destination: &f.Mode,
			Usage: "equinix (Equinix Metal pools and the hardware of their servers) or seeder (Harvester Seeder's job for servers you own, through its Inventory kind, as the harvester-seeder Addon; hardware, its former name, is still accepted)"},
		&cli.StringFlag{Name: "kubeconfig", EnvVars: []string{"KUBECONFIG"}, Destination: &f.Kubeconfig,
			Usage: "kubeconfig file; empty means in-cluster"},
		&cli.StringFlag{Name: "namespace", EnvVars: []string{"NAMESPACE"}, Value: "harvester-system", Destination: &f.Namespace,
			Usage: "namespace of the credentials Secret, generated Secrets and the leader lease"},
		&cli.StringFlag{Name: "secret-name", EnvVars: []string{"SECRET_NAME"}, Value: "equinix-addon", Destination: &f.SecretName,
			Usage: "default Secret with METAL_AUTH_TOKEN and PROJECT_ID"},
		&cli.IntFlag{Name: "threads", EnvVars: []string{"THREADS"}, Value: 5, Destination: &f.Threads,
			Usage: "worker threads per controller"},
		&cli.StringFlag{Name: "metal-api-url", EnvVars: []string{"METAL_API_URL"}, Value: config.DefaultMetalAPIURL, Destination: &f.MetalAPIURL,
			Usage: "Equinix Metal API base URL, ending in /metal/v1"},
		&cli.DurationFlag{Name: "metal-timeout", EnvVars: []string{"METAL_TIMEOUT"}, Value: 30 * time.Second, Destination: &f.MetalTimeout,
			Usage: "timeout of one Metal API request"},
		&cli.StringFlag{Name: "http-address", EnvVars: []string{"HTTP_ADDRESS"}, Value: ":8080", Destination: &f.HTTPAddress,
			Usage: "address serving /metrics, /healthz and /readyz"},
		&cli.BoolFlag{Name: "leader-elect", EnvVars: []string{"LEADER_ELECT"}, Value: true, Destination: &f.LeaderElect,
			Usage: "take a Lease before reconciling, so that only one replica acts"},
		&cli.StringFlag{Name: "leader-lock-name", EnvVars: []string{"LEADER_LOCK_NAME"}, Value: "harvester-equinix-addon", Destination: &f.LeaderLockName,
			Usage: "name of the leader-election Lease in --namespace"},
		&cli.StringFlag{Name: "log-level", EnvVars: []string{"LOG_LEVEL"}, Value: "info", Destination: &f.LogLevelName,
			Usage: "panic, fatal, error, warn, info, debug or trace"},
		&cli.StringFlag{Name: "log-format", EnvVars: []string{"LOG_FORMAT"}, Value: "text", Destination: &f.LogFormat,
			Usage: "text or json"},
		&cli.BoolFlag{Name: "debug", EnvVars: []string{"DEBUG"}, Destination: &f.Debug,
			Usage: "debug logging and pprof on 127.0.0.1:6060"},
		&cli.Float64Flag{Name: "metal-requests-per-second", EnvVars: []string{"METAL_REQUESTS_PER_SECOND"}, Value: 10, Destination: &f.MetalRequestsPerSecond,
			Usage: "client-side rate limit of Metal API calls per project"},
		&cli.IntFlag{Name: "metal-burst", EnvVars: []string{"METAL_BURST"}, Value: 20, Destination: &f.MetalBurst,
			Usage: "burst of the Metal API rate limit"},
		&cli.Float64Flag{Name: "kube-api-qps", EnvVars: []string{"KUBE_API_QPS"}, Value: 50, Destination: &f.KubeAPIQPS,
			Usage: "client-side limit of kube-apiserver requests per second, one bucket shared by every controller (Events and leader election have their own)"},
		&cli.IntFlag{Name: "kube-api-burst", EnvVars: []string{"KUBE_API_BURST"}, Value: 100, Destination: &f.KubeAPIBurst,
			Usage: "burst of the kube-apiserver request limit"},
		&cli.StringFlag{Name: "cluster-id", EnvVars: []string{"CLUSTER_ID"}, Destination: &f.ClusterID,
			Usage: "ID tagged on every Metal object the addon creates; empty means the kube-system namespace UID"},
		&cli.StringFlag{Name: "cluster-url", EnvVars: []string{"CLUSTER_URL"}, Destination: &f.ClusterURL,
			Usage: "URL new nodes join (https://<VIP>:443); empty means read from ConfigMap <namespace>/vip"},
		&cli.StringFlag{Name: "join-token-secret", EnvVars: []string{"JOIN_TOKEN_SECRET"}, Value: "equinix-addon", Destination: &f.JoinTokenSecret,
			Usage: "Secret in --namespace holding the cluster join token"},
		&cli.StringFlag{Name: "join-token-key", EnvVars: []string{"JOIN_TOKEN_KEY"}, Value: "JOIN_TOKEN", Destination: &f.JoinTokenKey,
			Usage: "key of the join token in --join-token-secret"},
		&cli.StringFlag{Name: "rancherd-config", EnvVars: []string{"RANCHERD_CONFIG"}, Destination: &f.RancherdConfig,
			Usage: "path of rancherd's config.yaml, read for the join token when the Secret has none"},
		&cli.StringFlag{Name: "ipxe-address", EnvVars: []string{"IPXE_ADDRESS"}, Value: ":8081", Destination: &f.IPXEAddress,
			Usage: "address serving the installer iPXE scripts to new servers"},
		&cli.StringFlag{Name: "ipxe-public-url", EnvVars: []string{"IPXE_PUBLIC_URL"}, Destination: &f.IPXEPublicURL,
			Usage: "base URL servers fetch iPXE scripts from; empty means http://<VIP>:<ipxe-node-port>"},
		&cli.IntFlag{Name: "ipxe-node-port", EnvVars: []string{"IPXE_NODE_PORT"}, Destination: &f.IPXENodePort,
			Usage: "NodePort of the chart's iPXE Service, used with the VIP when --ipxe-public-url is empty"},
		&cli.StringFlag{Name: "artifacts-mirror", EnvVars: []string{"ARTIFACTS_MIRROR"}, Destination: &f.ArtifactsMirror,
			Usage: "base URL of a copy of releases.rancher.com/harvester (<url>/<version>/<file>) the installer scripts boot from; empty means the official release URLs"},
		&cli.StringFlag{Name: "boot-loaders-dir", EnvVars: []string{"BOOT_LOADERS_DIR"}, Value: "/usr/share/harvester-equinix-addon/boot-loaders", Destination: &f.BootLoadersDir,
			Usage: "folder of the boot loaders a claim's virtual media image carries (the image ships them here); absent, the boot endpoint serves no images"},
		&cli.DurationFlag{Name: "poll-interval", EnvVars: []string{"POLL_INTERVAL"}, Value: 15 * time.Second, Destination: &f.PollInterval,
			Usage: "how often a server in a waiting state is polled"},
		&cli.DurationFlag{Name: "orphan-sweep-interval", EnvVars: []string{"ORPHAN_SWEEP_INTERVAL"}, Value: 10 * time.Minute, Destination: &f.OrphanSweepInterval,
			Usage: "how often devices tagged with this cluster are checked for a missing Instance"},
		&cli.DurationFlag{Name: "orphan-grace-period", EnvVars: []string{"ORPHAN_GRACE_PERIOD"}, Value: 30 * time.Minute, Destination: &f.OrphanGracePeriod,
			Usage: "age an orphaned device must reach before it is deleted"},
		&cli.DurationFlag{Name: "replacement-backoff", EnvVars: []string{"REPLACEMENT_BACKOFF"}, Value: 30 * time.Second, Destination: &f.ReplacementBackoff,
			Usage: "first wait before replacing a server that failed to join; doubles per failure in a row, up to 10m"},
		&cli.BoolFlag{Name: "orphan-dry-run", EnvVars: []string{"ORPHAN_DRY_RUN"}, Destination: &f.OrphanDryRun,
			Usage: "only report orphaned devices, never delete them"},
		&cli.DurationFlag{Name: "create-backoff", EnvVars: []string{"CREATE_BACKOFF"}, Value: time.Minute, Destination: &f.CreateBackoff,
			Usage: "first wait after Equinix Metal refused a device create (no capacity, invalid request); doubles per refusal in a row, up to 30m"},
		&cli.BoolFlag{Name: "check-release-artifacts", EnvVars: []string{"CHECK_RELEASE_ARTIFACTS"}, Value: true, Destination: &f.CheckReleaseArtifacts,
			Usage: "check that the Harvester release's ISO exists (HTTP HEAD) before creating a server for it"},
		&cli.BoolFlag{Name: "vip-elastic-ip", EnvVars: []string{"VIP_ELASTIC_IP"}, Value: true, Destination: &f.VIPElasticIP,
			Usage: "create the ElasticIP of the cluster VIP when the VIP is an Elastic IP of the project, so it follows kube-vip"},
		&cli.DurationFlag{Name: "elastic-ip-resync-interval", EnvVars: []string{"ELASTIC_IP_RESYNC_INTERVAL"}, Value: time.Minute, Destination: &f.ElasticIPResync,
			Usage: "how often an ElasticIP at rest re-reads its reservation (one Metal call each)"},
		&cli.BoolFlag{Name: "bgp", EnvVars: []string{"BGP"}, Destination: &f.BGP,
			Usage: "enable BGP on the project, open a session per server and annotate Nodes as the Equinix CCM does, for kube-vip and MetalLB in BGP mode"},
		&cli.Int64Flag{Name: "bgp-local-asn", EnvVars: []string{"BGP_LOCAL_ASN"}, Value: 65000, Destination: &f.BGPLocalASN,
			Usage: "ASN the project's BGP config is requested with when it has none"},
		&cli.DurationFlag{Name: "bgp-resync-interval", EnvVars: []string{"BGP_RESYNC_INTERVAL"}, Value: 10 * time.Minute, Destination: &f.BGPResync,
			Usage: "how often a node's BGP session is checked at rest (one Metal call per node)"},
		&cli.BoolFlag{Name: "owned-pools", EnvVars: []string{"OWNED_POOLS"}, Destination: &f.OwnedPools,
			Usage: "(--mode hardware) run the InstancePools of servers you own (spec.servers): claim Inventories, boot them from the network through their BMCs"},
		&cli.IntFlag{Name: "owned-threads", EnvVars: []string{"OWNED_THREADS"}, Value: 20, Destination: &f.OwnedThreads,
			Usage: "(--owned-pools) Instances of servers you own handled at once: their passes wait on BMCs (one session per BMC at a time), not on the CPU"},
		&cli.BoolFlag{Name: "initialize-nodes", EnvVars: []string{"INITIALIZE_NODES"}, Destination: &f.InitializeNodes,
			Usage: "initialize Nodes registered with --cloud-provider=external as the Equinix CCM does: addresses from the device, provider ID, the uninitialized taint removed"},
		&cli.StringFlag{Name: "bgp-node-selector", EnvVars: []string{"BGP_NODE_SELECTOR"}, Destination: &f.BGPNodeSelector,
			Usage: "label selector of the Nodes that get a BGP session and the annotations (empty: every Node)"},
		&cli.DurationFlag{Name: "device-events-interval", EnvVars: []string{"DEVICE_EVENTS_INTERVAL"}, Value: 5 * time.Minute, Destination: &f.DeviceEventsInterval,
			Usage: "how often each Metal project's event log is read (one paginated list) and its devices' new events forwarded as Kubernetes Events; 0 turns it off"},
		&cli.DurationFlag{Name: "termination-check-interval", EnvVars: []string{"TERMINATION_CHECK_INTERVAL"}, Value: time.Minute, Destination: &f.TerminationCheckInterval,
			Usage: "how often a Metal project with spot servers is asked which devices it will take back (one filtered list); 0 turns it off"},
		&cli.DurationFlag{Name: "bmc-timeout", EnvVars: []string{"BMC_TIMEOUT"}, Value: 10 * time.Second, Destination: &f.BMCTimeout,
			Usage: "how long one request to the BMC of an Inventory may take (a login, a reading, a power command)"},
		&cli.DurationFlag{Name: "bmc-power-freshness", EnvVars: []string{"BMC_POWER_FRESHNESS"}, Value: 3 * time.Minute, Destination: &f.BMCPowerFreshness,
			Usage: "how old the power an Inventory shows may get between its polls: then its power alone is read, at the least cost to the BMC; 0 leaves it to the polls"},
		&cli.BoolFlag{Name: "fencing", EnvVars: []string{"FENCING"}, Destination: &f.Fencing,
			Usage: "(--mode hardware) switch off, through its BMC, the server of a node NotReady for the grace period, then taint its Node out-of-service so its VMs start elsewhere"},
		&cli.IntFlag{Name: "fencing-max-fenced", EnvVars: []string{"FENCING_MAX_FENCED"}, Value: 1, Destination: &f.FencingMaxFenced,
			Usage: "the most nodes fenced at once"},
		&cli.DurationFlag{Name: "fencing-grace-period", EnvVars: []string{"FENCING_GRACE_PERIOD"}, Value: 5 * time.Minute, Destination: &f.FencingGracePeriod,
			Usage: "how long a node stays NotReady before it is fenced"},
		&cli.BoolFlag{Name: "fencing-power-on", EnvVars: []string{"FENCING_POWER_ON"}, Destination: &f.FencingPowerOn,
			Usage: "switch a fenced server back on once its volumes are detached (otherwise a person does)"},
		&cli.StringFlag{Name: "node-name", EnvVars: []string{"NODE_NAME"}, Destination: &f.NodeName,
			Usage: "the node the controller runs on (the chart sets it from the downward API); never fenced"},
		&cli.StringFlag{Name: "pod-ip", EnvVars: []string{"POD_IP"}, Destination: &f.PodIP,
			Usage: "(--owned-pools) the controller pod's IP (the chart sets it from the downward API), where the other replicas forward boot requests while this one leads; empty means the IP of --ipxe-address"},
	}
}

func setupLogging(cfg *config.Config) {
	logrus.SetLevel(cfg.LogLevel)
	if cfg.LogFormat == "json" {
		logrus.SetFormatter(&logrus.JSONFormatter{})
	} else {
		logrus.SetFormatter(&logrus.TextFormatter{FullTimestamp: true})
	}
}

// signalContext is cancelled on SIGINT or SIGTERM, so that a pod stop drains
// work and exits 0; a second signal exits at once.
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case s := <-ch:
			logrus.Infof("received %s, shutting down", s)
			cancel()
		case <-ctx.Done():
			return
		}
		<-ch
		logrus.Warn("second signal, exiting now")
		os.Exit(1)
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel()
	}
}
