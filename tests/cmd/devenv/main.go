// Command devenv is the local environment behind `make demo`, `make
// demo-bmc`, `make demo-owned`, `make dev-up` and `make dev-down`: a real kube-apiserver and
// etcd (with kube-controller-manager's garbage collector, tests/cluster),
// what a Harvester cluster holds (tests/harvestercluster, as the
// integration tests set it up), the Equinix Metal simulator with its
// node-join agent, and the addon's controller, all from this checkout;
// the owned-server demo adds QEMU machines behind ipmi_sim (tests/vmrig).
// scripts/devenv builds it, the controller and the simulator (scripts/build),
// then runs it.
//
//	devenv up            start everything and leave it running (make dev-up)
//	devenv down          stop everything (make dev-down)
//	devenv demo [NAME]   start everything, show one thing the addon does,
//	                     tear down; NAME names a demo (demos.go), pool when
//	                     left out (make demo; make demo-bmc is demo bmc,
//	                     make demo-owned demo owned; demo owned-sim is
//	                     the same on simulated Redfish BMCs)
//
// Every process it starts is recorded by its PID in the state folder, and
// `down` stops exactly those.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
)

func main() {
	if err := newApp().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "devenv:", err)
		os.Exit(1)
	}
}

func newApp() *cli.App {
	var s settings
	return &cli.App{
		Name:   "devenv",
		Usage:  "the local environment: a cluster, the Metal simulator and the controller from this checkout",
		Flags:  settingFlags(&s),
		Before: func(*cli.Context) error { return s.resolve() },
		Commands: []*cli.Command{
			{
				Name:  "up",
				Usage: "start everything and leave it running; prints how to use it",
				Action: func(c *cli.Context) error {
					return withSignals(c.Context, func(ctx context.Context) error {
						e, err := up(ctx, s, true)
						if err != nil {
							return err
						}
						e.printUsage()
						return nil
					})
				},
			},
			{
				Name:   "down",
				Usage:  "stop everything up started",
				Action: func(*cli.Context) error { return down(s.dir) },
			},
			{
				Name:      "demo",
				Usage:     "start everything, show one thing the addon does, tear down",
				ArgsUsage: "[" + strings.Join(demoNames(), "|") + "]",
				Action: func(c *cli.Context) error {
					name := c.Args().First()
					if name == "" {
						name = demos[0].name
					}
					d, ok := demoNamed(name)
					if !ok {
						return fmt.Errorf("no demo %q; the demos: %s", name, strings.Join(demoNames(), ", "))
					}
					return withSignals(c.Context, func(ctx context.Context) error { return runDemo(ctx, s, d) })
				},
			},
		},
	}
}

// settings are the environment's parameters; each has the environment
// variable the shell version of this command read.
type settings struct {
	dir         string
	binDir      string
	metalToken  string
	projectID   string
	joinToken   string
	vip         string
	vipMetro    string
	timingScale float64
	installTime time.Duration
}

func settingFlags(s *settings) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "dir", EnvVars: []string{"DEVENV_DIR"}, Value: ".cache/dev", Destination: &s.dir,
			Usage: "state folder: kubeconfig, logs, the PIDs of what runs"},
		&cli.StringFlag{Name: "bin-dir", Value: "bin", Destination: &s.binDir,
			Usage: "where scripts/build put the controller and the simulator"},
		&cli.StringFlag{Name: "metal-token", EnvVars: []string{"METAL_TOKEN"}, Value: "dev-metal-token", Destination: &s.metalToken,
			Usage: "the simulated project's API token, in the credentials Secret"},
		&cli.StringFlag{Name: "project-id", EnvVars: []string{"PROJECT_ID"}, Value: "4f8b6c2e-0000-4000-8000-00000000d3e0", Destination: &s.projectID,
			Usage: "the simulated project"},
		&cli.StringFlag{Name: "join-token", EnvVars: []string{"JOIN_TOKEN"}, Value: "dev-join-token", Destination: &s.joinToken,
			Usage: "the cluster's join token the simulated installs must present"},
		&cli.StringFlag{Name: "vip", EnvVars: []string{"VIP"}, Value: "10.0.0.10", Destination: &s.vip,
			Usage: "the cluster's VIP, an Elastic IP of the project"},
		// The metro of the examples' pool, where the VIP is an Elastic IP too.
		&cli.StringFlag{Name: "vip-metro", EnvVars: []string{"VIP_METRO"}, Value: "sg", Destination: &s.vipMetro,
			Usage: "the VIP's metro"},
		&cli.Float64Flag{Name: "timing-scale", EnvVars: []string{"TIMING_SCALE"}, Value: 0.01, Destination: &s.timingScale,
			Usage: "the simulated devices' pace: 1 is real time, 0.01 is 100x faster"},
		&cli.DurationFlag{Name: "install-time", EnvVars: []string{"INSTALL_TIME"}, Value: 5 * time.Second, Destination: &s.installTime,
			Usage: "how long a simulated Harvester install takes"},
	}
}

// withSignals runs fn with a context that SIGINT and SIGTERM cancel, so
// that Ctrl-C still tears a demo down.
func withSignals(parent context.Context, fn func(context.Context) error) error {
	ctx, stop := signal.NotifyContext(parent, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return fn(ctx)
}
