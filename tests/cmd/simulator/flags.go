package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/rancher/wrangler/v3/pkg/kubeconfig"
	"github.com/urfave/cli/v2"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester/harvester-equinix-addon/tests/sim/standalone"
)

// simulatorFlags are the raw values of the simulator command's flags.
type simulatorFlags struct {
	listen             string
	token              string
	projectID          string
	extraProjects      cli.StringSlice
	seedFile           string
	reservations       cli.StringSlice
	elasticIPs         cli.StringSlice
	kubeconfig         string
	clusterURL         string
	joinToken          string
	timingScale        float64
	installTime        time.Duration
	heartbeatInterval  time.Duration
	emulateMaintenance bool
	tickInterval       time.Duration
	seed               int64
	rateLimit          int
	logLevel           string
}

func simulatorFlagList(f *simulatorFlags) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "listen", EnvVars: []string{"SIM_LISTEN"}, Value: "127.0.0.1:0", Destination: &f.listen,
			Usage: "address to serve the API on; port 0 picks a free port"},
		&cli.StringFlag{Name: "token", EnvVars: []string{"SIM_TOKEN"}, Destination: &f.token,
			Usage: "API token (X-Auth-Token) clients must send; required with --project-id unless --seed-file names projects"},
		&cli.StringFlag{Name: "project-id", EnvVars: []string{"SIM_PROJECT_ID"}, Destination: &f.projectID,
			Usage: "project the token may use"},
		&cli.StringSliceFlag{Name: "extra-project", EnvVars: []string{"SIM_EXTRA_PROJECTS"}, Destination: &f.extraProjects,
			Usage: "more projects as <token>:<project-id>; repeat the flag or separate with commas"},
		&cli.StringFlag{Name: "seed-file", EnvVars: []string{"SIM_SEED_FILE"}, Destination: &f.seedFile,
			Usage: "YAML or JSON file of projects, tokens, hardware reservations and spot prices (format below)"},
		&cli.StringSliceFlag{Name: "hardware-reservation", EnvVars: []string{"SIM_HARDWARE_RESERVATIONS"}, Destination: &f.reservations,
			Usage: "reserved servers as <project-id>:<plan>:<metro or facility>[:<count>]; repeat the flag or separate with commas"},
		&cli.StringSliceFlag{Name: "elastic-ip", EnvVars: []string{"SIM_ELASTIC_IPS"}, Destination: &f.elasticIPs,
			Usage: "blocks the first project holds as Elastic IPs from the start (a cluster's VIP, say): <block>@<metro> for public_ipv4, <block> alone for global_ipv4, e.g. 10.0.0.10/32@sg; repeat the flag or separate with commas"},
		&cli.StringFlag{Name: "kubeconfig", EnvVars: []string{"SIM_KUBECONFIG"}, Destination: &f.kubeconfig,
			Usage: "kubeconfig of the cluster simulated servers join; enables the node-join agent"},
		&cli.StringFlag{Name: "cluster-url", EnvVars: []string{"SIM_CLUSTER_URL"}, Destination: &f.clusterURL,
			Usage: "URL or VIP joining servers must name (compared as https://<host>:443); required with --kubeconfig"},
		&cli.StringFlag{Name: "join-token", EnvVars: []string{"SIM_JOIN_TOKEN"}, Destination: &f.joinToken,
			Usage: "join token servers must present; required with --kubeconfig"},
		&cli.Float64Flag{Name: "timing-scale", EnvVars: []string{"SIM_TIMING_SCALE"}, Value: 1, Destination: &f.timingScale,
			Usage: "factor on realistic durations: 1 is real time, 0.01 is 100x faster, 0 is instant"},
		&cli.DurationFlag{Name: "install-time", EnvVars: []string{"SIM_INSTALL_TIME"}, Destination: &f.installTime,
			Usage: "how long a Harvester install takes before the Node registers; 0 means 15m times --timing-scale"},
		&cli.DurationFlag{Name: "heartbeat-interval", EnvVars: []string{"SIM_HEARTBEAT_INTERVAL"}, Value: 10 * time.Second, Destination: &f.heartbeatInterval,
			Usage: "how often joined Nodes refresh their Ready heartbeat"},
		&cli.BoolFlag{Name: "emulate-maintenance", EnvVars: []string{"SIM_EMULATE_MAINTENANCE"}, Value: true, Destination: &f.emulateMaintenance,
			Usage: "with --kubeconfig, also complete the Harvester maintenance mode requested on nodes, as Harvester would"},
		&cli.DurationFlag{Name: "tick-interval", EnvVars: []string{"SIM_TICK_INTERVAL"}, Value: standalone.DefaultTickInterval, Destination: &f.tickInterval,
			Usage: "how often due transitions are applied when no client polls"},
		&cli.Int64Flag{Name: "seed", EnvVars: []string{"SIM_SEED"}, Value: 1, Destination: &f.seed,
			Usage: "seed of generated IDs and probabilistic faults"},
		&cli.IntFlag{Name: "rate-limit", EnvVars: []string{"SIM_RATE_LIMIT"}, Destination: &f.rateLimit,
			Usage: "requests per minute per token before answering 429; 0 means unlimited"},
		&cli.StringFlag{Name: "log-level", EnvVars: []string{"SIM_LOG_LEVEL"}, Value: "info", Destination: &f.logLevel,
			Usage: "panic, fatal, error, warn, info, debug or trace"},
	}
}

// config turns the flags into a standalone.Config; the join agent runs only
// with a kubeconfig, and then needs both the cluster URL and the join token.
func (f *simulatorFlags) config() (standalone.Config, error) {
	cfg := standalone.Config{
		Listen:       f.listen,
		TimingScale:  f.timingScale,
		Seed:         f.seed,
		RateLimit:    f.rateLimit,
		TickInterval: f.tickInterval,
	}
	if err := f.projects(&cfg); err != nil {
		return cfg, err
	}
	if f.kubeconfig == "" {
		if f.clusterURL != "" || f.joinToken != "" {
			return cfg, fmt.Errorf("--cluster-url and --join-token configure the join agent, which needs --kubeconfig")
		}
		return cfg, nil
	}
	if f.clusterURL == "" || f.joinToken == "" {
		return cfg, fmt.Errorf("the join agent (--kubeconfig) needs --cluster-url and --join-token")
	}
	kube, err := kubeClient(f.kubeconfig)
	if err != nil {
		return cfg, err
	}
	cfg.Join = &standalone.Join{
		Kube: kube, ClusterURL: f.clusterURL, Token: f.joinToken,
		InstallTime: f.installTime, HeartbeatInterval: f.heartbeatInterval, Maintenance: f.emulateMaintenance,
	}
	return cfg, nil
}

func kubeClient(path string) (kubernetes.Interface, error) {
	rc, err := kubeconfig.GetNonInteractiveClientConfig(path).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("building the Kubernetes client: %w", err)
	}
	return kube, nil
}

// projects gathers the projects and reservations of the flags and the seed
// file. Errors never echo a value that holds a token.
func (f *simulatorFlags) projects(cfg *standalone.Config) error {
	if f.seedFile != "" {
		seed, err := standalone.ReadSeedFile(f.seedFile)
		if err != nil {
			return err
		}
		seed.AddTo(cfg)
	}
	switch {
	case f.token != "" && f.projectID != "":
		cfg.Projects = append(cfg.Projects, standalone.Project{Token: f.token, ID: f.projectID})
	case f.token == "" && f.projectID == "" && len(cfg.Projects) == 0:
		return fmt.Errorf("required flags \"token\" and \"project-id\" not set (or name projects in a --seed-file)")
	case f.token == "" && f.projectID != "":
		return fmt.Errorf("required flag \"token\" not set: --project-id needs it")
	case f.token != "" && f.projectID == "":
		return fmt.Errorf("required flag \"project-id\" not set: --token needs it")
	}
	for i, v := range f.extraProjects.Value() {
		// Project IDs are UUIDs, so the last colon separates them from a
		// token that may contain colons.
		j := strings.LastIndex(v, ":")
		if j <= 0 || j == len(v)-1 {
			return fmt.Errorf("--extra-project %d: want <token>:<project-id>", i+1)
		}
		cfg.Projects = append(cfg.Projects, standalone.Project{Token: v[:j], ID: v[j+1:]})
	}
	for _, v := range f.reservations.Value() {
		r, err := standalone.ParseReservation(v)
		if err != nil {
			return fmt.Errorf("--hardware-reservation %w", err)
		}
		cfg.Reservations = append(cfg.Reservations, r)
	}
	for _, v := range f.elasticIPs.Value() {
		e, err := standalone.ParseElasticIP(v)
		if err != nil {
			return fmt.Errorf("--elastic-ip: %w", err)
		}
		cfg.ElasticIPs = append(cfg.ElasticIPs, e)
	}
	return nil
}
