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
	"github.com/harvester/harvester-equinix-addon/pkg/controller/common"
)

// startBootEndpoint serves the boot endpoint of the servers people own on
// the iPXE listener (--ipxe-address, the chart's iPXE Service), with the
// open claims read from this controller's caches. It runs with the
// controllers, so on the leader only: the claims live in its caches. Once
// it listens it labels its pod for the Service, and it removes the label
// when it stops.
func startBootEndpoint(ctx context.Context, deps *common.Deps, claims bootendpoint.Claims) error {
	cfg := deps.Cfg
	key, err := bootendpoint.Key(ctx, deps.Secrets, cfg.Namespace)
	if err != nil {
		return err
	}
	opts := []bootendpoint.Option{bootendpoint.WithArtifactsMirror(cfg.ArtifactsMirror)}
	if cfg.IPXEPublicURL != "" {
		opts = append(opts, bootendpoint.WithBaseURL(cfg.IPXEPublicURL))
	}
	ln, err := net.Listen("tcp", cfg.IPXEAddress)
	if err != nil {
		return fmt.Errorf("boot endpoint on %s: %w", cfg.IPXEAddress, err)
	}
	srv := &http.Server{Handler: bootendpoint.NewHandler(key, claims, opts...), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logrus.Errorf("boot endpoint on %s: %v", cfg.IPXEAddress, err)
		}
	}()
	if err := markServing(ctx, deps.K8s, cfg, true); err != nil {
		_ = srv.Close()
		return fmt.Errorf("boot endpoint: %w", err)
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// Out of the Service first, then stop: a server that boots now
		// finds the next leader, or nobody, rather than a closing port.
		if err := markServing(shutdown, deps.K8s, cfg, false); err != nil {
			logrus.Warnf("boot endpoint stopping: %v", err)
		}
		_ = srv.Shutdown(shutdown)
	}()
	logrus.Infof("boot endpoint of the servers people own listens on %s", ln.Addr())
	return nil
}
