package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
)

// startBootEndpoint serves the boot endpoint of the servers people own,
// with the open claims read from this controller's caches. It runs with
// the controllers, so on the leader only: the claims live in its caches.
// The process's relay (every replica's listener on --ipxe-address, behind
// the chart's iPXE Service) answers with it from now on; without a relay
// (the controllers run on their own) it listens on --ipxe-address itself.
func startBootEndpoint(ctx context.Context, deps *common.Deps, claims bootendpoint.Claims, relay *bootendpoint.Relay) error {
	cfg := deps.Cfg
	// The key's Secret is read, or created once, as the leader starts: an
	// apiserver that has just restarted may refuse that for a moment (its
	// authorizer not ready yet), which must not stop the process.
	var key []byte
	err := untilReachable(ctx, startupBackoff, func(ctx context.Context) error {
		var err error
		key, err = bootendpoint.Key(ctx, deps.Secrets, cfg.Namespace)
		return err
	})
	if err != nil {
		return fmt.Errorf("boot endpoint key: %w", err)
	}
	opts := []bootendpoint.Option{bootendpoint.WithArtifactsMirror(cfg.ArtifactsMirror)}
	if cfg.IPXEPublicURL != "" {
		opts = append(opts, bootendpoint.WithBaseURL(cfg.IPXEPublicURL))
	}
	handler := bootendpoint.NewHandler(key, claims, opts...)
	if relay != nil {
		relay.Serve(ctx, handler)
		logrus.Info("the leader serves the boot endpoint of the servers people own")
		return nil
	}
	ln, err := net.Listen("tcp", cfg.IPXEAddress)
	if err != nil {
		return fmt.Errorf("boot endpoint on %s: %w", cfg.IPXEAddress, err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logrus.Errorf("boot endpoint on %s: %v", cfg.IPXEAddress, err)
		}
	}()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	logrus.Infof("boot endpoint of the servers people own listens on %s", ln.Addr())
	return nil
}
