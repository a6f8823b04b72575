// Command bench measures the addon against the Metal simulator and prints the
// figures of its benchmark (API frugality, controller overhead, idle
// cost, scale, throttling, the simulator's cost by fleet size) in one table, which it also writes as markdown
// for docs/benchmarks.md. `make bench` runs it through scripts/bench.
//
// It starts one real kube-apiserver + etcd for the whole run. Every scenario
// gets a fresh simulator (instant device timings) and node-join agent, runs
// the real controller binary as a child process (so its /metrics and its
// memory are its own), and leaves nothing behind for the next.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
)

// config is the benchmark's settings; every flag has a BENCH_* variable.
type config struct {
	binary    string
	outFile   string
	workDir   string
	scenarios cli.StringSlice
	// controllerArgs are appended to the controller's flags.
	controllerArgs cli.StringSlice

	seed         int64
	threads      int
	pollInterval time.Duration
	installTime  time.Duration
	// ownedMedia adds the owned pool on Redfish BMCs with virtual media.
	ownedMedia  bool
	metalRPS    float64
	kubeQPS     float64
	kubeBurst   int
	networkType string

	frugalityPool int
	quiet         time.Duration

	fleetInstances int
	fleetPools     int
	fleetTimeout   time.Duration

	idleWindow time.Duration

	scaleInstances int
	scalePools     int
	scaleTimeout   time.Duration
	scaleFloor     bool

	// memoryLimit is the pod memory limit the controller runs under.
	memoryLimit string

	simcostDevices int
	simcostServers int

	throttleProbability float64
	throttleRetryAfter  time.Duration

	bmcFleet bmcFleetConfig
}

// bench runs the scenarios on one environment.
type bench struct {
	cfg *config
	env *env
	log logrus.FieldLogger
	// goMemLimit is what --memory-limit gives the controller as GOMEMLIMIT.
	goMemLimit string
	// fleet is the overhead scenario's figure, which the scale scenario of
	// the same run compares itself with; zero when it did not run.
	fleet fleetFigure
}

// fleetFigure is one fleet's convergence: how long, and how many Metal calls
// per server.
type fleetFigure struct {
	servers        int
	elapsed        time.Duration
	callsPerServer float64
	// ops are its Metal calls by operation.
	ops opCounts
	// floor is the floor's time for the same fleet.
	floor time.Duration
}

// scenario is one figure of the benchmark.
type scenario struct {
	name  string
	title string
	run   func(ctx context.Context, b *bench) (result, error)
}

var scenarios = []scenario{
	{"frugality", "1. API frugality", runFrugality},
	{"overhead", "2. Controller overhead", runOverhead},
	{"idle", "3. Idle cost", runIdle},
	{"scale", "4. Scale", runScale},
	{"throttle", "5. Throttling", runThrottle},
	{"simcost", "6. Simulator cost by fleet size", runSimCost},
	{"bmc", "7. BMC sessions and requests", runBMC},
	{"fleet", "8. The BMC chain at fleet size", runBMCFleet},
	{"ownedpool", "9. A pool of servers people own", runOwnedPool},
	{"bootpath", "10. A virtual media boot on QEMU, without DHCP", runBootPath},
}

func main() {
	cfg := &config{}
	app := &cli.App{
		Name:  "bench",
		Usage: "measure the addon against the Metal simulator (make bench)",
		Flags: flags(cfg),
		Action: func(c *cli.Context) error {
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return run(ctx, cfg)
		},
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func flags(cfg *config) []cli.Flag {
	names := make([]string, len(scenarios))
	for i, s := range scenarios {
		names[i] = s.name
	}
	return append([]cli.Flag{
		&cli.StringFlag{Name: "binary", EnvVars: []string{"BENCH_BINARY"}, Required: true, Destination: &cfg.binary,
			Usage: "the controller binary to measure"},
		&cli.StringFlag{Name: "out", EnvVars: []string{"BENCH_OUT"}, Value: ".cache/bench/results.md", Destination: &cfg.outFile,
			Usage: "markdown file receiving the results"},
		&cli.StringFlag{Name: "work-dir", EnvVars: []string{"BENCH_DIR"}, Value: ".cache/bench", Destination: &cfg.workDir,
			Usage: "folder for the controller logs"},
		&cli.StringSliceFlag{Name: "scenarios", EnvVars: []string{"BENCH"}, Value: cli.NewStringSlice(names...), Destination: &cfg.scenarios,
			Usage: "scenarios to run, comma-separated: " + strings.Join(names, ",")},
		&cli.StringSliceFlag{Name: "controller-arg", EnvVars: []string{"BENCH_CONTROLLER_ARGS"}, Destination: &cfg.controllerArgs,
			Usage: "extra controller flag, repeatable (e.g. --debug, which serves pprof on 127.0.0.1:6060)"},
		&cli.Int64Flag{Name: "seed", EnvVars: []string{"BENCH_SEED"}, Value: 1, Destination: &cfg.seed,
			Usage: "simulator seed (IDs and the 429 draws)"},
		&cli.IntFlag{Name: "threads", EnvVars: []string{"BENCH_THREADS"}, Value: 5, Destination: &cfg.threads,
			Usage: "controller --threads (its default)"},
		&cli.DurationFlag{Name: "poll-interval", EnvVars: []string{"BENCH_POLL_INTERVAL"}, Value: 15 * time.Second, Destination: &cfg.pollInterval,
			Usage: "controller --poll-interval (its default)"},
		&cli.DurationFlag{Name: "install-time", EnvVars: []string{"BENCH_INSTALL_TIME"}, Value: 100 * time.Millisecond, Destination: &cfg.installTime,
			Usage: "simulated Harvester install time"},
		&cli.BoolFlag{Name: "owned-media", EnvVars: []string{"BENCH_OWNED_MEDIA"}, Value: true, Destination: &cfg.ownedMedia,
			Usage: "figure 9 also on Redfish BMCs with virtual media"},
		&cli.Float64Flag{Name: "metal-rps", EnvVars: []string{"BENCH_METAL_RPS"}, Value: 1000, Destination: &cfg.metalRPS,
			Usage: "controller --metal-requests-per-second (and burst), high so the client-side limiter does not dominate"},
		&cli.Float64Flag{Name: "kube-api-qps", EnvVars: []string{"BENCH_KUBE_API_QPS"}, Value: 50, Destination: &cfg.kubeQPS,
			Usage: "controller --kube-api-qps (its default), which the floor's clients use too"},
		&cli.IntFlag{Name: "kube-api-burst", EnvVars: []string{"BENCH_KUBE_API_BURST"}, Value: 100, Destination: &cfg.kubeBurst,
			Usage: "controller --kube-api-burst (its default), which the floor's clients use too"},
		&cli.StringFlag{Name: "network-type", EnvVars: []string{"BENCH_NETWORK_TYPE"}, Value: "hybrid", Destination: &cfg.networkType,
			Usage: "network type of the overhead, idle, scale and throttling pools (hybrid is the seed sample's)"},
		&cli.IntFlag{Name: "frugality-pool", EnvVars: []string{"BENCH_FRUGALITY_POOL"}, Value: 10, Destination: &cfg.frugalityPool,
			Usage: "servers per network type in the frugality scenario"},
		&cli.DurationFlag{Name: "quiet", EnvVars: []string{"BENCH_QUIET"}, Destination: &cfg.quiet,
			Usage: "how long no Metal call must come before a frugality run ends (default: 2 poll intervals + 5s)"},
		&cli.IntFlag{Name: "instances", EnvVars: []string{"BENCH_INSTANCES"}, Value: 100, Destination: &cfg.fleetInstances,
			Usage: "servers of the overhead, idle and throttling scenarios"},
		&cli.IntFlag{Name: "pools", EnvVars: []string{"BENCH_POOLS"}, Value: 10, Destination: &cfg.fleetPools,
			Usage: "pools of the overhead, idle and throttling scenarios"},
		&cli.DurationFlag{Name: "timeout", EnvVars: []string{"BENCH_TIMEOUT"}, Value: 20 * time.Minute, Destination: &cfg.fleetTimeout,
			Usage: "longest wait for the overhead, idle and throttling servers"},
		&cli.DurationFlag{Name: "idle-window", EnvVars: []string{"BENCH_IDLE_WINDOW"}, Value: 5 * time.Minute, Destination: &cfg.idleWindow,
			Usage: "observation window of each idle measurement (one --device-events-interval, so that it sees one event poll)"},
		&cli.IntFlag{Name: "scale-instances", EnvVars: []string{"BENCH_SCALE_INSTANCES"}, Value: 2000, Destination: &cfg.scaleInstances,
			Usage: "servers of the scale scenario"},
		&cli.IntFlag{Name: "scale-pools", EnvVars: []string{"BENCH_SCALE_POOLS"}, Value: 200, Destination: &cfg.scalePools,
			Usage: "pools of the scale scenario"},
		&cli.DurationFlag{Name: "scale-timeout", EnvVars: []string{"BENCH_SCALE_TIMEOUT"}, Value: 30 * time.Minute, Destination: &cfg.scaleTimeout,
			Usage: "longest wait for the scale scenario to converge"},
		&cli.BoolFlag{Name: "scale-floor", EnvVars: []string{"BENCH_SCALE_FLOOR"}, Value: true, Destination: &cfg.scaleFloor,
			Usage: "run the floor (the bare client with the minimum writes and calls) for the scale fleet too, after the controller"},
		&cli.StringFlag{Name: "memory-limit", EnvVars: []string{"BENCH_MEMORY_LIMIT"}, Value: chartMemoryLimit, Destination: &cfg.memoryLimit,
			Usage: "pod memory limit to run the controller under, as the chart's resources.limits.memory (its default); " +
				"the controller gets GOMEMLIMIT at the share it takes of a cgroup limit in a pod. \"none\" runs it unlimited"},
		&cli.IntFlag{Name: "simcost-devices", EnvVars: []string{"BENCH_SIMCOST_DEVICES"}, Value: 2000, Destination: &cfg.simcostDevices,
			Usage: "servers of the simulator-cost scenario's large fleet (compared with 10)"},
		&cli.IntFlag{Name: "simcost-servers", EnvVars: []string{"BENCH_SIMCOST_SERVERS"}, Value: 40, Destination: &cfg.simcostServers,
			Usage: "servers the simulator-cost scenario measures at each fleet size"},
		&cli.Float64Flag{Name: "throttle-probability", EnvVars: []string{"BENCH_THROTTLE_PROBABILITY"}, Value: 0.3, Destination: &cfg.throttleProbability,
			Usage: "share of Metal calls answered 429"},
		&cli.DurationFlag{Name: "throttle-retry-after", EnvVars: []string{"BENCH_THROTTLE_RETRY_AFTER"}, Value: time.Second, Destination: &cfg.throttleRetryAfter,
			Usage: "Retry-After of those 429s"},
	}, bmcFleetFlags(&cfg.bmcFleet)...)
}

func (cfg *config) selected() ([]scenario, error) {
	var out []scenario
	for _, name := range cfg.scenarios.Value() {
		name = strings.TrimSpace(name)
		found := false
		for _, s := range scenarios {
			if s.name == name {
				out, found = append(out, s), true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown scenario %q", name)
		}
	}
	return out, nil
}

func (cfg *config) validate() error {
	switch {
	case cfg.frugalityPool < 1, cfg.fleetInstances < 1, cfg.fleetPools < 1, cfg.scaleInstances < 1, cfg.scalePools < 1:
		return fmt.Errorf("instance and pool counts must be positive")
	case cfg.fleetInstances%cfg.fleetPools != 0 || cfg.scaleInstances%cfg.scalePools != 0:
		return fmt.Errorf("instances must split evenly over pools (%d/%d, %d/%d)",
			cfg.fleetInstances, cfg.fleetPools, cfg.scaleInstances, cfg.scalePools)
	case cfg.fleetInstances/cfg.fleetPools > 1000 || cfg.scaleInstances/cfg.scalePools > 1000:
		return fmt.Errorf("a pool holds at most 1000 servers")
	case cfg.simcostDevices < costSmall || cfg.simcostServers < 1:
		return fmt.Errorf("the simulator-cost fleet needs at least %d servers and one measured server", costSmall)
	case cfg.throttleProbability < 0 || cfg.throttleProbability >= 1:
		return fmt.Errorf("throttle probability %g is not in [0, 1)", cfg.throttleProbability)
	}
	if cfg.quiet == 0 {
		cfg.quiet = 2*cfg.pollInterval + 5*time.Second
	}
	return nil
}

func run(ctx context.Context, cfg *config) error {
	started := time.Now()
	selected, err := cfg.selected()
	if err != nil {
		return err
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	limit, err := goMemLimit(cfg.memoryLimit)
	if err != nil {
		return err
	}
	logrus.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: "15:04:05"})
	log := logrus.WithField("component", "bench")
	machine, err := describeMachine(ctx)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.workDir, 0o755); err != nil {
		return err
	}
	workDir, err := filepath.Abs(cfg.workDir)
	if err != nil {
		return err
	}
	if err := cluster.CheckBinaries(cluster.DefaultBinDir()); err != nil {
		return err
	}
	e, err := newEnv(ctx, cfg.binary, workDir, log)
	if err != nil {
		return err
	}
	defer e.stop()
	b := &bench{cfg: cfg, env: e, log: log, goMemLimit: limit}
	rep := &report{machine: machine, started: started}
	for _, s := range selected {
		if err := ctx.Err(); err != nil {
			return err
		}
		rep.add(b.runScenario(ctx, s))
	}
	rep.duration = time.Since(started)
	out := rep.markdown()
	fmt.Print(out)
	if err := os.MkdirAll(filepath.Dir(cfg.outFile), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(cfg.outFile, []byte(out), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", cfg.outFile, err)
	}
	log.Infof("results written to %s (%s in all)", cfg.outFile, rep.duration.Round(time.Second))
	return nil
}

// runScenario runs one scenario and cleans up after it. A failed scenario
// is reported in the table; the next one still runs.
func (b *bench) runScenario(ctx context.Context, s scenario) result {
	start := time.Now()
	b.log.Infof("=== %s", s.title)
	res, err := s.run(ctx, b)
	if err != nil {
		b.log.Errorf("%s: %v", s.title, err)
		res.rows = append(res.rows, row{figure: s.title, result: "failed: " + err.Error(), verdict: verdictError})
	}
	if cerr := b.env.cleanup(ctx); cerr != nil {
		res.rows = append(res.rows, row{figure: s.title, result: "cleanup failed: " + cerr.Error(), verdict: verdictError})
	}
	res.elapsed = time.Since(start)
	res.title = s.title
	b.log.Infof("=== %s took %s", s.title, res.elapsed.Round(time.Second))
	return res
}
