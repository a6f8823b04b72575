// Package instancepool keeps each InstancePool at `count` Instances: it creates
// and removes them, replaces failed ones, and reports the pool's status.
package instancepool

import (
	"context"
	"time"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	"github.com/rancher/wrangler/v3/pkg/relatedresource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	seedercontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/joininfo"
)

// Handler names; HandlerRemove is persisted in the finalizer
// wrangler.cattle.io/instancepool-remove on every pool, so keep it stable.
const (
	HandlerRemove   = "instancepool-remove"
	HandlerSync     = "instancepool-sync"
	watchInstances  = "instancepool-watch-instances"
	watchSecrets    = "instancepool-watch-secrets"
	watchConfigMaps = "instancepool-watch-configmaps"
	watchSettings   = "instancepool-watch-settings"

	// The pools of servers people own (--mode hardware) have handlers, and
	// so a finalizer, of their own.
	HandlerOwnedRemove    = "instancepool-owned-remove"
	HandlerOwnedSync      = "instancepool-owned-sync"
	watchOwnedInstances   = "instancepool-owned-watch-instances"
	watchOwnedInventories = "instancepool-owned-watch-inventories"

	// indexByPool indexes Instances by spec.poolName.
	indexByPool = "equinix.harvesterhci.io/instances-by-pool"
)

// Settings are the parts of the configuration the pool controller reads.
type Settings struct {
	// PollInterval paces a pool waiting for its servers' deletion;
	// ReplacementBackoff is the first wait before a failed server's
	// successor is created.
	PollInterval, ReplacementBackoff time.Duration
}

// Handler holds the pool controller and what it reads and writes.
type Handler struct {
	ctx       context.Context
	settings  Settings
	pools     equinixcontrollers.InstancePoolController
	instances equinixcontrollers.InstanceController
	nodes     corecontrollers.NodeCache
	// inventories are the servers people own (the hardware mode's only).
	inventories seedercontrollers.InventoryCache
	credentials *credentials.Resolver
	joinInfo    *joininfo.Resolver
	releases    *harvester.ReleaseChecker
	recorder    record.EventRecorder
	// statusPacing spaces the status writes that only report progress.
	statusPacing *statusPacing
}

// Register wires the pool handlers and the watches that re-run a pool when its
// Instances, or the Secrets, ConfigMaps and Settings it depends on, change.
func Register(ctx context.Context, deps *common.Deps) error {
	h := newHandler(ctx, deps)
	h.credentials, h.releases = deps.Credentials(), deps.Releases()
	common.OnRemoveWhere(ctx, deps.Pools(), HandlerRemove, common.MetalPool, h.RemovePool)
	common.OnChangeWhere(ctx, deps.Pools(), HandlerSync, common.MetalPool, h.SyncPool)
	relatedresource.WatchClusterScoped(ctx, watchInstances, poolOfInstance, common.After(deps.Pools(), common.RelatedDelay), deps.Instances())
	relatedresource.WatchClusterScoped(ctx, watchSecrets, common.OnlyInputs(deps.InputSecret, h.allPools), common.After(deps.Pools(), common.RelatedDelay), deps.Secrets())
	relatedresource.WatchClusterScoped(ctx, watchConfigMaps, common.OnlyInputs(deps.InputConfigMap, h.allPools), common.After(deps.Pools(), common.RelatedDelay), deps.ConfigMaps())
	relatedresource.WatchClusterScoped(ctx, watchSettings, common.OnlyInputs(common.InputSetting, h.allPools), common.After(deps.Pools(), common.RelatedDelay), deps.Settings())
	return nil
}

// RegisterOwned wires the same pool engine for the pools of servers people
// own (--owned-pools): scale, delete order, replacement, remediation and
// rollout are the pool's; what differs is in the Instances' chain.
func RegisterOwned(ctx context.Context, deps *common.Deps) error {
	if !deps.Cfg.OwnedPools {
		return nil
	}
	h := newHandler(ctx, deps)
	h.inventories = deps.Inventories().Cache()
	common.OnRemoveWhere(ctx, deps.Pools(), HandlerOwnedRemove, common.OwnedPool, h.RemovePool)
	common.OnChangeWhere(ctx, deps.Pools(), HandlerOwnedSync, common.OwnedPool, h.SyncPool)
	relatedresource.WatchClusterScoped(ctx, watchOwnedInstances, poolOfInstance, common.After(deps.Pools(), common.RelatedDelay), deps.Instances())
	// A server freed or added is capacity for a rollout's surge.
	relatedresource.WatchClusterScoped(ctx, watchOwnedInventories, h.allPools, common.After(deps.Pools(), common.RelatedDelay), deps.Inventories())
	return nil
}

func newHandler(ctx context.Context, deps *common.Deps) *Handler {
	h := &Handler{
		ctx:      ctx,
		settings: Settings{PollInterval: deps.Cfg.PollInterval, ReplacementBackoff: deps.Cfg.ReplacementBackoff},
		pools:    deps.Pools(), instances: deps.Instances(), nodes: deps.Nodes().Cache(),
		joinInfo: deps.JoinInfo(), recorder: deps.Recorder(),
		statusPacing: newStatusPacing(),
	}
	deps.Instances().Cache().AddIndexer(indexByPool, func(i *equinixv1.Instance) ([]string, error) {
		return []string{i.Spec.PoolName}, nil
	})
	return h
}

func poolOfInstance(_, _ string, obj runtime.Object) ([]relatedresource.Key, error) {
	inst, ok := obj.(*equinixv1.Instance)
	if !ok || inst == nil {
		return nil, nil
	}
	return []relatedresource.Key{{Name: inst.Spec.PoolName}}, nil
}

// allPools re-runs every pool: there are few, and a changed input can
// concern any of them.
func (h *Handler) allPools(_, _ string, _ runtime.Object) ([]relatedresource.Key, error) {
	pools, err := h.pools.Cache().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	keys := make([]relatedresource.Key, 0, len(pools))
	for _, p := range pools {
		keys = append(keys, relatedresource.Key{Name: p.Name})
	}
	return keys, nil
}
