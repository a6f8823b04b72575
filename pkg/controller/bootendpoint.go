package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
)

// serveBootEndpoint serves the boot endpoint of the servers people own
// (--owned-pools), with the open claims read from this controller's
// caches. It runs with the controllers, so on the leader only: the claims
// live in its caches.
func serveBootEndpoint(ctx context.Context, deps *common.Deps) error {
	cfg := deps.Cfg
	if !cfg.OwnedPools {
		return nil
	}
	claims, err := deps.BootClaims()
	if err != nil {
		return err
	}
	server, err := deps.BootServer()
	if err != nil {
		return err
	}
	// The key's Secret is read, or created once, as the leader starts: an
	// apiserver that has just restarted may refuse that for a moment (its
	// authorizer not ready yet), which must not stop the process.
	var key []byte
	err = common.UntilReachable(ctx, common.StartupBackoff, func(ctx context.Context) error {
		var err error
		key, err = bootendpoint.Key(ctx, deps.Secrets(), cfg.Namespace)
		return err
	})
	if err != nil {
		return fmt.Errorf("boot endpoint key: %w", err)
	}
	opts := []bootendpoint.Option{bootendpoint.WithArtifactsMirror(cfg.ArtifactsMirror)}
	if cfg.IPXEPublicURL != "" {
		opts = append(opts, bootendpoint.WithBaseURL(cfg.IPXEPublicURL))
	}
	media, err := bootMedia(ctx, cfg.BootLoadersDir)
	if err != nil {
		return err
	}
	if media != nil {
		opts = append(opts, media)
	}
	return server.Serve(ctx, bootendpoint.NewHandler(key, claims, opts...))
}

// bootMedia is the boot endpoint's option to serve the claims' virtual
// media images, nil where the loaders' folder is absent (a build of the
// controller without them: the images are only not served). The images
// are built in a folder of the process's temporary directory, removed
// when ctx ends.
func bootMedia(ctx context.Context, dir string) (bootendpoint.Option, error) {
	loaders, err := bootendpoint.LoadBootMedia(dir)
	if errors.Is(err, bootendpoint.ErrNoBootMedia) {
		logrus.Infof("no boot loaders in %q: the boot endpoint serves no virtual media images", dir)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("boot loaders in %s: %w", dir, err)
	}
	images, err := os.MkdirTemp("", "boot-media-")
	if err != nil {
		return nil, fmt.Errorf("boot images folder: %w", err)
	}
	go func() {
		<-ctx.Done()
		_ = os.RemoveAll(images)
	}()
	return bootendpoint.WithBootMedia(loaders, images), nil
}

// bootServer is the process's relay (every replica's listener on
// --ipxe-address, behind the chart's iPXE Service), which answers with
// the leader's handler from now on; without a relay (the controllers run
// on their own) a listener on --ipxe-address of their own.
func bootServer(cfg *config.Config, relay *bootendpoint.Relay) common.BootServer {
	if relay != nil {
		return relayServer{relay: relay}
	}
	return listener{address: cfg.IPXEAddress}
}

type relayServer struct{ relay *bootendpoint.Relay }

func (s relayServer) Serve(ctx context.Context, handler http.Handler) error {
	s.relay.Serve(ctx, handler)
	logrus.Info("the leader serves the boot endpoint of the servers people own")
	return nil
}

type listener struct{ address string }

func (l listener) Serve(ctx context.Context, handler http.Handler) error {
	ln, err := net.Listen("tcp", l.address)
	if err != nil {
		return fmt.Errorf("boot endpoint on %s: %w", l.address, err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logrus.Errorf("boot endpoint on %s: %v", l.address, err)
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
