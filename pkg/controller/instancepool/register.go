// Package instancepool keeps each InstancePool at `count` Instances: it creates
// and removes them, replaces failed ones, and reports the pool's status.
package instancepool

import (
	"context"
	"time"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	"github.com/rancher/wrangler/v3/pkg/relatedresource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/joininfo"
)

// indexByPool indexes Instances by spec.poolName.
const indexByPool = "equinix.harvesterhci.io/instances-by-pool"

// Settings are the parts of the configuration the pool controller reads.
type Settings struct {
	// PollInterval paces a pool waiting for its servers' deletion;
	// ReplacementBackoff is the first wait before a failed server's
	// successor is created.
	PollInterval, ReplacementBackoff time.Duration
}

// Handler holds the pool controller and what it reads and writes.
type Handler struct {
	ctx      context.Context
	settings Settings
	// provider answers what only it knows of the pools' servers.
	provider  provision.Provider
	pools     equinixcontrollers.InstancePoolController
	instances equinixcontrollers.InstanceController
	nodes     corecontrollers.NodeCache
	joinInfo  *joininfo.Resolver
	// releases checks a release's ISO before the pool's servers are asked
	// for; nil when --check-release-artifacts is off or the provider's
	// Traits ask for no check.
	releases *harvester.ReleaseChecker
	recorder record.EventRecorder
	// statusPacing spaces the status writes that only report progress.
	statusPacing *statusPacing
}

// Register wires the pool handlers for the provider's pools, under the
// provider's names (the remove handler's is stored in the finalizer of
// every such pool), and the watch that re-runs a pool when its Instances
// change; the provider wires what else wakes its pools.
func Register(ctx context.Context, deps *common.Deps, p provision.Provider) {
	h := &Handler{
		ctx:      ctx,
		settings: Settings{PollInterval: deps.Cfg.PollInterval, ReplacementBackoff: deps.Cfg.ReplacementBackoff},
		provider: p, pools: deps.Pools(), instances: deps.Instances(), nodes: deps.Nodes().Cache(),
		joinInfo: deps.JoinInfo(), recorder: deps.Recorder(),
		statusPacing: newStatusPacing(),
	}
	if p.Traits().CheckRelease {
		h.releases = deps.Releases()
	}
	deps.Instances().Cache().AddIndexer(indexByPool, func(i *equinixv1.Instance) ([]string, error) {
		return []string{i.Spec.PoolName}, nil
	})
	names := p.Names()
	handles := func(pool *equinixv1.InstancePool) bool { return p.Handles(&pool.Spec.InstanceTemplate) }
	common.OnRemoveWhere(ctx, deps.Pools(), names.PoolRemove(), handles, h.RemovePool)
	common.OnChangeWhere(ctx, deps.Pools(), names.PoolSync(), handles, h.SyncPool)
	relatedresource.WatchClusterScoped(ctx, names.Pool+"-watch-instances", poolOfInstance, common.After(deps.Pools(), common.RelatedDelay), deps.Instances())
}

func poolOfInstance(_, _ string, obj runtime.Object) ([]relatedresource.Key, error) {
	inst, ok := obj.(*equinixv1.Instance)
	if !ok || inst == nil {
		return nil, nil
	}
	return []relatedresource.Key{{Name: inst.Spec.PoolName}}, nil
}
