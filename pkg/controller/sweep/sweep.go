// Package sweep periodically compares what Equinix Metal has with what the
// cluster expects, with one paginated device list per project:
//   - orphans: devices tagged with this cluster's ID that no Instance claims
//     are reported, and deleted once older than the grace period (unless dry
//     run). Devices without the tag are never touched.
//   - drift: a joined Instance whose device is no longer there is marked, so
//     its pool replaces it. Joined Instances make no Metal call of their own,
//     so this list is what notices.
//   - VLANs this cluster created that nothing uses any more are deleted.
//   - Nodes the addon labelled whose Instance and device are both gone (a
//     finalizer removed by hand) are deleted.
//
// It covers every project the ledger remembers, not only those of today's
// pools: a project a Secret no longer names can still hold the addon's
// objects.
package sweep

import (
	"context"
	"fmt"
	"strings"
	"time"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/ledger"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// Settings are the parts of the configuration the sweep reads.
type Settings struct {
	// Namespace holds the credentials Secrets; Events about objects of no
	// pool go to it.
	Namespace string
	// Interval, GracePeriod and DryRun shape the orphan handling;
	// MetalTimeout bounds how late a lost create may land.
	Interval, GracePeriod, MetalTimeout time.Duration
	DryRun                              bool
}

// Sweeper runs the sweep with what it reads and writes.
type Sweeper struct {
	ctx       context.Context
	settings  Settings
	clusterID string

	instances   equinixcontrollers.InstanceController
	pools       equinixcontrollers.InstancePoolCache
	nodes       corecontrollers.NodeController
	secrets     corecontrollers.SecretCache
	namespaces  typedcorev1.NamespaceInterface
	metal       metal.Provider
	credentials *credentials.Resolver
	ledger      *ledger.Ledger
	recorder    record.EventRecorder
	drift       common.DriftMarker

	now func() time.Time
	// emptySince is when each ledger project was first found empty.
	emptySince map[string]time.Time
}

// Register starts the sweep loop; it runs only on the leader, like every
// controller, once the caches have synced. It marks drift through the
// Instance chain's handler.
func Register(ctx context.Context, deps *common.Deps) error {
	cfg := deps.Cfg
	clusterID, err := deps.ClusterID()
	if err != nil {
		return err
	}
	provider, err := deps.Metal()
	if err != nil {
		return err
	}
	drift, err := deps.DriftMarker()
	if err != nil {
		return err
	}
	s := &Sweeper{
		ctx: ctx,
		settings: Settings{Namespace: cfg.Namespace, Interval: cfg.OrphanSweepInterval, GracePeriod: cfg.OrphanGracePeriod,
			MetalTimeout: cfg.MetalTimeout, DryRun: cfg.OrphanDryRun},
		clusterID: clusterID,
		instances: deps.Instances(), pools: deps.Pools().Cache(), nodes: deps.Nodes(), secrets: deps.Secrets().Cache(),
		namespaces: deps.K8s().CoreV1().Namespaces(), metal: provider, credentials: deps.Credentials(),
		ledger: deps.Ledger(), recorder: deps.Recorder(), drift: drift,
		now: time.Now, emptySince: map[string]time.Time{},
	}
	go func() {
		if !waitForCaches(ctx, deps) {
			return
		}
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			if err := s.Sweep(ctx); err != nil {
				logrus.Warnf("device sweep: %v", err)
			}
		}, s.settings.Interval)
	}()
	return nil
}

func waitForCaches(ctx context.Context, deps *common.Deps) bool {
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		return deps.Instances().Informer().HasSynced() && deps.Pools().Informer().HasSynced() &&
			deps.Secrets().Informer().HasSynced() && deps.Nodes().Informer().HasSynced() &&
			deps.ConfigMaps().Informer().HasSynced(), nil
	})
	return err == nil
}

// Sweep runs once over every Metal project the addon has made objects in.
func (s *Sweeper) Sweep(ctx context.Context) error {
	insts, err := s.instances.Cache().List(labels.Everything())
	if err != nil {
		return err
	}
	projects, err := s.projects(insts)
	if err != nil {
		return err
	}
	seen := newSeenDevices()
	var errs []string
	for _, p := range projects {
		if p.creds == nil {
			seen.incomplete = true
			s.unreachable(p)
			continue
		}
		if err := s.sweepProject(ctx, p, insts, seen); err != nil {
			seen.incomplete = true
			errs = append(errs, err.Error())
		}
	}
	if err := s.orphanNodes(seen); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
