// Command harvester-equinix-addon-simulator serves a simulated Equinix Metal
// API (and, with a kubeconfig, plays the servers that install Harvester and
// join the cluster) for the demo, `make dev-up` and the tests that need it
// as a process. It is a command of its own, never part of the controller's
// binary, so that what runs in users' clusters carries no simulator.
//
//	harvester-equinix-addon-simulator --token T --project-id P [flags]
//
// The first line on stdout is the API base URL (ending in /metal/v1), so a
// script can start it and read where to point the controller's
// --metal-api-url; logs go to stderr. SIGINT or SIGTERM stops it cleanly.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/harvester/harvester-equinix-addon/pkg/version"
	"github.com/harvester/harvester-equinix-addon/tests/sim/standalone"
)

func main() {
	if err := newApp().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func newApp() *cli.App {
	var f simulatorFlags
	return &cli.App{
		Name:    "harvester-equinix-addon-simulator",
		Usage:   "serve a simulated Equinix Metal API; prints its base URL (ending in /metal/v1) as the first line",
		Version: version.FriendlyVersion(),
		Description: "Serves the Metal API under /metal/v1, the metadata service, and an admin API under /_sim\n" +
			"(faults, reclaims, maintenance notices; loopback clients only). Projects come from --token\n" +
			"and --project-id, --extra-project and --hardware-reservation, and/or a --seed-file.\n\n" +
			standalone.SeedFormat,
		Flags: simulatorFlagList(&f),
		Action: func(c *cli.Context) error {
			return serve(c, &f)
		},
	}
}

// serve starts the simulator, prints its URL and serves until a signal.
func serve(c *cli.Context, f *simulatorFlags) error {
	cfg, err := f.config()
	if err != nil {
		return err
	}
	level, err := logrus.ParseLevel(f.logLevel)
	if err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logrus.SetLevel(level)
	logrus.SetFormatter(&logrus.TextFormatter{FullTimestamp: true})
	// A second signal after the first restores the default action, so a
	// stuck shutdown can still be interrupted.
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	sim, err := standalone.Start(ctx, cfg)
	if err != nil {
		return err
	}
	// Logs go to stderr, so this stays the first line of stdout.
	if _, err := fmt.Fprintln(c.App.Writer, sim.URL); err != nil {
		return fmt.Errorf("writing the base URL: %w", err)
	}
	<-ctx.Done()
	stop()
	logrus.Info("shutting down")
	return sim.Close()
}
