package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sync/errgroup"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
)

// leaderName is the first part of this replica's identity in the Lease.
func leaderName() (string, error) {
	name, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("leader identity: %w", err)
	}
	return name, nil
}

// serveBootRelay listens on --ipxe-address on every replica, leader or
// not: the chart's iPXE Service picks any ready pod, and a standby
// forwards to the leader, whose address it reads from the Lease it
// already reads for leader election (no other permission). name is this
// replica's hostname; the identity it returns for the Lease adds the
// process and that address.
func serveBootRelay(ctx context.Context, g *errgroup.Group, cfg *config.Config, k8s kubernetes.Interface, name string) (*bootendpoint.Relay, string, error) {
	ln, err := net.Listen("tcp", cfg.IPXEAddress)
	if err != nil {
		return nil, "", fmt.Errorf("boot endpoint on %s: %w", cfg.IPXEAddress, err)
	}
	addr := bootendpoint.AdvertisedAddress(cfg.PodIP, ln.Addr())
	if addr == "" && cfg.LeaderElect {
		logrus.Warnf("boot endpoint on %s: no POD_IP and no IP in --ipxe-address; other replicas cannot forward to this one", ln.Addr())
	}
	id := bootendpoint.LeaderIdentity(name, os.Getpid(), addr)
	var lease bootendpoint.LeaderLease
	if cfg.LeaderElect {
		leases := k8s.CoordinationV1().Leases(cfg.Namespace)
		lease = func(ctx context.Context) (*coordinationv1.Lease, error) {
			return leases.Get(ctx, cfg.LeaderLockName, metav1.GetOptions{})
		}
	}
	relay := bootendpoint.NewRelay(id, lease)
	srv := &http.Server{Handler: relay, ReadHeaderTimeout: 10 * time.Second}
	g.Go(func() error {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("boot endpoint on %s: %w", ln.Addr(), err)
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
		return nil
	})
	logrus.Infof("boot endpoint of the servers people own listens on %s (advertised as %q)", ln.Addr(), addr)
	return relay, id, nil
}
