// Package app is the command line: flags (each mirrored by an environment
// variable) parsed into config.Flags, then handed to the server.
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
	var f config.Flags
	app := &cli.App{
		Name:    "harvester-equinix-addon",
		Usage:   "provision pools of Equinix Metal servers that install Harvester and join this cluster",
		Version: version.FriendlyVersion(),
		Flags:   controllerFlags(&f),
		Action: func(c *cli.Context) error {
			cfg, err := config.New(f)
			if err != nil {
				return err
			}
			setupLogging(cfg)
			ctx, cancel := signalContext(c.Context)
			defer cancel()
			return server.Run(ctx, cfg)
		},
		Commands: []*cli.Command{},
	}
	return app
}

func controllerFlags(f *config.Flags) []cli.Flag {
	return []cli.Flag{
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
		&cli.StringFlag{Name: "log-level", EnvVars: []string{"LOG_LEVEL"}, Value: "info", Destination: &f.LogLevel,
			Usage: "panic, fatal, error, warn, info, debug or trace"},
		&cli.StringFlag{Name: "log-format", EnvVars: []string{"LOG_FORMAT"}, Value: "text", Destination: &f.LogFormat,
			Usage: "text or json"},
		&cli.BoolFlag{Name: "debug", EnvVars: []string{"DEBUG"}, Destination: &f.Debug,
			Usage: "debug logging and pprof on 127.0.0.1:6060"},
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
