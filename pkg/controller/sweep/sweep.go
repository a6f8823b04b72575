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

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/harvester/harvester-equinix-addon/pkg/controller/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/instance"
)

// Sweeper runs the sweep.
type Sweeper struct {
	deps      *common.Deps
	instances *instance.Handler
	ctx       context.Context
	now       func() time.Time
	// emptySince is when each ledger project was first found empty.
	emptySince map[string]time.Time
}

// Register starts the sweep loop; it runs only on the leader, like every
// controller, once the caches have synced.
func Register(ctx context.Context, deps *common.Deps) error {
	s := &Sweeper{deps: deps, instances: instance.New(ctx, deps), ctx: ctx, now: time.Now, emptySince: map[string]time.Time{}}
	go func() {
		if !waitForCaches(ctx, deps) {
			return
		}
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			if err := s.Sweep(ctx); err != nil {
				logrus.Warnf("device sweep: %v", err)
			}
		}, deps.Cfg.OrphanSweepInterval)
	}()
	return nil
}

func waitForCaches(ctx context.Context, deps *common.Deps) bool {
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		return deps.Instances.Informer().HasSynced() && deps.Pools.Informer().HasSynced() &&
			deps.Secrets.Informer().HasSynced() && deps.Nodes.Informer().HasSynced() &&
			deps.ConfigMaps.Informer().HasSynced(), nil
	})
	return err == nil
}

// Sweep runs once over every Metal project the addon has made objects in.
func (s *Sweeper) Sweep(ctx context.Context) error {
	insts, err := s.deps.Instances.Cache().List(labels.Everything())
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
