// Package server runs the controller process: HTTP endpoints, leader election and
// the controllers.
package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/rancher/wrangler/v3/pkg/kubeconfig"
	"github.com/sirupsen/logrus"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/controller"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
	"github.com/harvester/harvester-equinix-addon/pkg/version"
)

// Run serves health and metrics, waits for the leader lease (when enabled) and
// runs the controllers until ctx is cancelled. It returns nil on a requested
// shutdown so the process exits 0.
func Run(ctx context.Context, cfg *config.Config) error {
	logrus.Infof("harvester-equinix-addon %s starting", version.FriendlyVersion())
	applyMemoryLimit()
	metrics.RegisterKubeClientMetrics()
	restConfig, err := kubeconfig.GetNonInteractiveClientConfig(cfg.Kubeconfig).ClientConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	restConfig.UserAgent = "harvester-equinix-addon/" + version.Version
	restConfig.QPS, restConfig.Burst = float32(cfg.KubeAPIQPS), cfg.KubeAPIBurst
	k8s, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("building kubernetes client: %w", err)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := &readiness{}
	srv := &http.Server{Addr: cfg.HTTPAddress, Handler: newMux(ready), ReadHeaderTimeout: 10 * time.Second}
	if cfg.Debug {
		startPprof(ctx)
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := serve(gctx, srv); err != nil {
			return fmt.Errorf("http server on %s: %w", cfg.HTTPAddress, err)
		}
		return nil
	})
	if cfg.Mode != config.ModeSeeder {
		// The iPXE scripts are served by every replica, leader or not:
		// servers booting on Equinix fetch them through the chart's
		// Service. The seeder mode installs nothing.
		ipxe := &http.Server{Addr: cfg.IPXEAddress, Handler: harvester.NewIPXEHandler(harvester.WithArtifactsMirror(cfg.ArtifactsMirror)), ReadHeaderTimeout: 10 * time.Second}
		g.Go(func() error {
			if err := serve(gctx, ipxe); err != nil {
				return fmt.Errorf("ipxe server on %s: %w", cfg.IPXEAddress, err)
			}
			return nil
		})
	}
	id, err := leaderName()
	if err != nil {
		return err
	}
	var startOpts []controller.Option
	if cfg.Mode == config.ModeSeeder && cfg.OwnedPools {
		var relay *bootendpoint.Relay
		if relay, id, err = serveBootRelay(gctx, g, cfg, k8s, id); err != nil {
			return err
		}
		startOpts = append(startOpts, controller.WithBootRelay(relay))
	} else {
		id = bootendpoint.LeaderIdentity(id, os.Getpid(), "")
	}
	g.Go(func() error {
		start := func(ctx context.Context) error {
			if err := controller.Start(ctx, restConfig, cfg, startOpts...); err != nil {
				return err
			}
			ready.ready.Store(true)
			logrus.Info("controllers started")
			<-ctx.Done()
			return nil
		}
		if !cfg.LeaderElect {
			return start(gctx)
		}
		// A standby replica is healthy and ready: it is doing its job by waiting.
		ready.ready.Store(true)
		return runWithLease(gctx, cfg, k8s, id, func(ctx context.Context) error {
			ready.ready.Store(false)
			return start(ctx)
		})
	})
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// runWithLease is client-go leader election with ReleaseOnCancel, so a stopping
// leader hands the Lease over at once instead of making the next one wait out the
// lease duration. (wrangler's leader.RunOrDie neither releases nor returns: it
// calls os.Exit, which would skip the HTTP server's shutdown.)
// id is this replica's identity in the Lease (bootendpoint.LeaderIdentity).
func runWithLease(ctx context.Context, cfg *config.Config, k8s kubernetes.Interface, id string, run func(context.Context) error) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.LeaderLockName},
		Client:     k8s.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	lctx, lcancel := context.WithCancel(ctx)
	defer lcancel()
	runErr := make(chan error, 1)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   30 * time.Second,
		RenewDeadline:   20 * time.Second,
		RetryPeriod:     4 * time.Second,
		ReleaseOnCancel: true,
		Name:            cfg.LeaderLockName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				logrus.Infof("acquired lease %s/%s as %s", cfg.Namespace, cfg.LeaderLockName, id)
				if err := run(ctx); err != nil {
					runErr <- err
					lcancel()
				}
			},
			OnStoppedLeading: func() {
				logrus.Infof("released lease %s/%s", cfg.Namespace, cfg.LeaderLockName)
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	elector.Run(lctx)
	select {
	case err := <-runErr:
		return err
	default:
	}
	if ctx.Err() != nil {
		return nil
	}
	// Losing the lease while not shutting down means another replica may act now:
	// stop, and let the pod restart as a standby.
	return errors.New("lost the leader lease")
}
