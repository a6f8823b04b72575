// Package instance runs an Instance from a Metal device to a Ready Harvester
// node (the provisioning chain) and back to nothing (the cleanup chain). The
// networking chain lives in package network and runs on the same objects.
package instance

import (
	"context"
	"time"

	"github.com/rancher/wrangler/v3/pkg/relatedresource"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/vlans"
)

// Handler names. They are persisted: HandlerRemove is part of the finalizer
// (wrangler.cattle.io/instance-remove) stored on every Instance, so renaming it
// would strand Instances. Keep them stable.
const (
	HandlerRemove    = "instance-remove"
	HandlerProvision = "instance-provision"
	HandlerNetwork   = "instance-network"
	watchNodes       = "instance-watch-nodes"
	watchSecrets     = "instance-watch-secrets"
	watchConfigMaps  = "instance-watch-configmaps"
	watchSettings    = "instance-watch-settings"

	// Finalizer is what wrangler's OnRemove stores for HandlerRemove.
	Finalizer = "wrangler.cattle.io/" + HandlerRemove
)

// Handler holds the provisioning and cleanup chains of Instances.
type Handler struct {
	// ctx ends when the controller stops; Metal calls use it so that a shutdown
	// does not wait for them.
	ctx     context.Context
	deps    *common.Deps
	devices *deviceCache
	vlanIDs *vlans.IDCache
	// now is the clock of the chains (time.Now when nil).
	now func() time.Time
}

// Register wires the Instance chains. The remove handler is registered first:
// it adds the finalizer before the provisioning handler is allowed to make any
// Metal call (lessons: finalizer before any cloud call).
func Register(ctx context.Context, deps *common.Deps) error {
	h := New(ctx, deps)
	deps.Instances.OnRemove(ctx, HandlerRemove, h.RemoveInstance)
	deps.Instances.OnChange(ctx, HandlerProvision, h.ProvisionInstance)
	deps.Instances.OnChange(ctx, HandlerNetwork, h.ConvergeNetwork)
	relatedresource.WatchClusterScoped(ctx, watchNodes, h.instanceOfNode, common.After(deps.Instances, common.RelatedDelay), deps.Nodes)
	relatedresource.WatchClusterScoped(ctx, watchSecrets, common.OnlyInputs(deps.InputSecret, h.waitingInstances), common.After(deps.Instances, common.RelatedDelay), deps.Secrets)
	relatedresource.WatchClusterScoped(ctx, watchConfigMaps, common.OnlyInputs(deps.InputConfigMap, h.waitingInstances), common.After(deps.Instances, common.RelatedDelay), deps.ConfigMaps)
	relatedresource.WatchClusterScoped(ctx, watchSettings, common.OnlyInputs(common.InputSetting, h.waitingInstances), common.After(deps.Instances, common.RelatedDelay), deps.Settings)
	return nil
}

// New builds the handler; Register and the periodic sweep use it.
func New(ctx context.Context, deps *common.Deps) *Handler {
	// Shorter than the poll interval, so that polling sees Equinix's progress.
	ttl := min(deps.Cfg.PollInterval/2, 5*time.Second)
	return &Handler{ctx: ctx, deps: deps, devices: newDeviceCache(ttl), vlanIDs: vlans.NewIDCache(30 * time.Second)}
}

// instanceOfNode maps a Node to the Instance it was installed for.
func (h *Handler) instanceOfNode(_, name string, obj runtime.Object) ([]relatedresource.Key, error) {
	node, ok := obj.(*corev1.Node)
	if !ok || node == nil {
		// A deleted Node arrives as nil: its Instance has the same name.
		return []relatedresource.Key{{Name: name}}, nil
	}
	if inst, ok := node.Labels[v1.LabelInstance]; ok {
		return []relatedresource.Key{{Name: inst}}, nil
	}
	return nil, nil
}

// waitingInstances re-runs every Instance that is not yet managed when an
// input it may depend on changes: fixed credentials, a join token, the VIP or
// the cluster version let it continue at once.
func (h *Handler) waitingInstances(_, _ string, _ runtime.Object) ([]relatedresource.Key, error) {
	insts, err := h.deps.Instances.Cache().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var keys []relatedresource.Key
	for _, inst := range insts {
		if inst.Status.Status != v1.PhaseManaged {
			keys = append(keys, relatedresource.Key{Name: inst.Name})
		}
	}
	return keys, nil
}
