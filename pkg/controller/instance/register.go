// Package instance runs an Instance from a Metal device to a Ready Harvester
// node (the provisioning chain), keeps its ports at the pool's network type
// and VLANs (the networking chain, planned by package network), and takes it
// back to nothing (the cleanup chain).
package instance

import (
	"context"
	"time"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	"github.com/rancher/wrangler/v3/pkg/relatedresource"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/ledger"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/vlans"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	seedercontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/joininfo"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/bmcdriver"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
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
	Finalizer = equinixv1.FinalizerInstance

	// The chains of servers people own (--mode hardware): handlers of
	// their own, so that their finalizer is not the equinix mode's.
	HandlerOwnedRemove    = "instance-owned-remove"
	HandlerOwnedProvision = "instance-owned-provision"
	watchOwnedNodes       = "instance-owned-watch-nodes"
	watchInventories      = "instance-owned-watch-inventories"

	// FinalizerOwned is what wrangler's OnRemove stores for
	// HandlerOwnedRemove.
	FinalizerOwned = equinixv1.FinalizerInstanceOwned
)

// Settings are the parts of the configuration the Instance chains read.
type Settings struct {
	// Namespace holds the console-password Secrets.
	Namespace string
	// PollInterval paces waiting states; MetalTimeout bounds one call and
	// the wait for a create whose answer was lost; CreateBackoff is the
	// first wait after a refused create.
	PollInterval, MetalTimeout, CreateBackoff time.Duration
	// BMCTimeout bounds one request to the BMC of a server people own.
	BMCTimeout time.Duration
	// BGP (--bgp) makes servers on a layer-3 management network route
	// Equinix Metal's BGP peers through their private gateway.
	BGP bool
}

// Handler holds the chains of Instances and what they read and write.
type Handler struct {
	// ctx ends when the controller stops; Metal calls use it so that a shutdown
	// does not wait for them.
	ctx       context.Context
	settings  Settings
	clusterID string

	instances equinixcontrollers.InstanceController
	pools     equinixcontrollers.InstancePoolCache
	nodes     corecontrollers.NodeController
	// written are the chains' latest writes of Nodes (a maintenance
	// request), which the Node cache shows a moment later.
	written      *common.NodeWrites
	secrets      corecontrollers.SecretController
	secretLookup *credentials.Lookup
	k8s          kubernetes.Interface
	metal        metal.Provider
	credentials  *credentials.Resolver
	joinInfo     *joininfo.Resolver
	ledger       *ledger.Ledger
	releases     *harvester.ReleaseChecker
	plans        *metal.PlanCatalog
	recorder     record.EventRecorder

	// inventories are the servers people own; bmcs their BMCs (the
	// hardware mode's shared driver); owned what the chain keeps of its
	// claims. Unused by Metal Instances.
	inventories seedercontrollers.InventoryController
	bmcs        *bmcdriver.Driver
	owned       *ownedState

	devices    *deviceCache
	vlanIDs    *vlans.IDCache
	versions   *versions
	reinstalls *reinstalls
	adoption   *adoptionLists
	// now is the clock of the chains (time.Now when nil).
	now func() time.Time
}

// Register wires the Instance chains of Equinix Metal devices. The remove
// handler is registered first: it adds the finalizer, and no Metal call may
// happen before the finalizer is stored, or a crash right after a create
// would leave a paid device nothing deletes.
func Register(ctx context.Context, deps *common.Deps) error {
	h, err := metalHandler(ctx, deps)
	if err != nil {
		return err
	}
	common.OnRemoveWhere(ctx, deps.Instances(), HandlerRemove, common.MetalInstance, h.RemoveInstance)
	common.OnChangeWhere(ctx, deps.Instances(), HandlerProvision, common.MetalInstance, h.ProvisionInstance)
	common.OnChangeWhere(ctx, deps.Instances(), HandlerNetwork, common.MetalInstance, h.ConvergeNetwork)
	relatedresource.WatchClusterScoped(ctx, watchNodes, h.instanceOfNode, common.After(deps.Instances(), common.RelatedDelay), deps.Nodes())
	relatedresource.WatchClusterScoped(ctx, watchSecrets, common.OnlyInputs(deps.InputSecret, h.instancesOfSecret), common.After(deps.Instances(), common.RelatedDelay), deps.Secrets())
	relatedresource.WatchClusterScoped(ctx, watchConfigMaps, common.OnlyInputs(deps.InputConfigMap, h.waitingInstances), common.After(deps.Instances(), common.RelatedDelay), deps.ConfigMaps())
	relatedresource.WatchClusterScoped(ctx, watchSettings, common.OnlyInputs(common.InputSetting, h.waitingInstances), common.After(deps.Instances(), common.RelatedDelay), deps.Settings())
	return nil
}

// DriftMarker is the handler of Equinix Metal devices, through which the
// sweep marks a joined Instance whose device is gone.
func DriftMarker(ctx context.Context, deps *common.Deps) (common.DriftMarker, error) {
	return metalHandler(ctx, deps)
}

// RegisterOwned wires the Instance chains of servers people own
// (--owned-pools): the remove handler first (no BMC command before its
// finalizer is stored), provisioning, the Nodes, and the Inventories (a
// server freed wakes the Instances waiting for one).
func RegisterOwned(ctx context.Context, deps *common.Deps) error {
	if !deps.Cfg.OwnedPools {
		return nil
	}
	h, err := ownedHandler(ctx, deps)
	if err != nil {
		return err
	}
	common.OnRemoveWhere(ctx, deps.Instances(), HandlerOwnedRemove, common.OwnedInstance, h.RemoveInstance)
	common.OnChangeWhere(ctx, deps.Instances(), HandlerOwnedProvision, common.OwnedInstance, h.ProvisionInstance)
	relatedresource.WatchClusterScoped(ctx, watchOwnedNodes, h.instanceOfNode, common.After(deps.Instances(), common.RelatedDelay), deps.Nodes())
	relatedresource.WatchClusterScoped(ctx, watchInventories, h.instancesOfInventory, common.After(deps.Instances(), common.RelatedDelay), deps.Inventories())
	return nil
}

// OpenClaims are the open claims of the owned servers' handler, which the
// boot endpoint serves.
func OpenClaims(ctx context.Context, deps *common.Deps) (common.BootClaims, error) {
	h, err := ownedHandler(ctx, deps)
	if err != nil {
		return nil, err
	}
	return h.BootClaims(), nil
}

// The handlers among the shared values of Deps: each is built once, by
// the first of its Register and its user to ask.
type (
	metalHandlerKey struct{}
	ownedHandlerKey struct{}
)

// metalHandler is the handler of Equinix Metal devices.
func metalHandler(ctx context.Context, deps *common.Deps) (*Handler, error) {
	return common.Shared(deps, metalHandlerKey{}, func() (*Handler, error) {
		clusterID, err := deps.ClusterID()
		if err != nil {
			return nil, err
		}
		provider, err := deps.Metal()
		if err != nil {
			return nil, err
		}
		h := newHandler(ctx, deps)
		h.clusterID, h.metal, h.credentials = clusterID, provider, deps.Credentials()
		h.ledger, h.releases, h.plans = deps.Ledger(), deps.Releases(), deps.Plans()
		return h, nil
	})
}

// ownedHandler is the handler of servers people own.
func ownedHandler(ctx context.Context, deps *common.Deps) (*Handler, error) {
	return common.Shared(deps, ownedHandlerKey{}, func() (*Handler, error) {
		h := newHandler(ctx, deps)
		h.inventories, h.bmcs = deps.Inventories(), deps.BMCs()
		h.owned = newOwnedState(deps.Inventories().Informer().GetStore())
		return h, nil
	})
}

// instancesOfInventory re-runs the Instance that holds a changed
// Inventory, and every owned Instance still waiting for a server.
func (h *Handler) instancesOfInventory(_, _ string, obj runtime.Object) ([]relatedresource.Key, error) {
	var holder string
	if inv, ok := obj.(*seederv1alpha1.Inventory); ok && inv != nil {
		holder = inv.Labels[equinixv1.LabelClaimedBy]
	}
	return h.instancesWhere(func(inst *equinixv1.Instance) bool {
		return inst.Spec.Owned() && (inst.Name == holder || inst.Status.Server == "")
	})
}

// newHandler builds what both providers' handlers hold.
func newHandler(ctx context.Context, deps *common.Deps) *Handler {
	cfg := deps.Cfg
	// Shorter than the poll interval, so that polling sees Equinix's progress.
	ttl := min(cfg.PollInterval/2, 5*time.Second)
	return &Handler{
		ctx: ctx,
		settings: Settings{Namespace: cfg.Namespace, PollInterval: cfg.PollInterval,
			MetalTimeout: cfg.MetalTimeout, CreateBackoff: cfg.CreateBackoff, BGP: cfg.BGP, BMCTimeout: cfg.BMCTimeout},
		instances: deps.Instances(), pools: deps.Pools().Cache(), nodes: deps.Nodes(), written: deps.NodeWrites(), secrets: deps.Secrets(),
		secretLookup: deps.SecretLookup(), k8s: deps.K8s(), joinInfo: deps.JoinInfo(), recorder: deps.Recorder(),
		devices: newDeviceCache(ttl), vlanIDs: vlans.NewIDCache(30 * time.Second), versions: newVersions(), reinstalls: newReinstalls(),
		adoption: newAdoptionLists(cfg.PollInterval),
	}
}

// vlanUsers says which VLANs the Instances want, for their garbage collection.
func (h *Handler) vlanUsers() vlans.Users {
	return vlans.Users{Instances: h.instances.Cache(), Credentials: h.credentials, ClusterID: h.clusterID}
}

// instanceOfNode maps a Node to the Instance it was installed for.
func (h *Handler) instanceOfNode(_, name string, obj runtime.Object) ([]relatedresource.Key, error) {
	node, ok := obj.(*corev1.Node)
	if !ok || node == nil {
		// A deleted Node arrives as nil, with its name only: an Equinix
		// Metal server's Instance has the same name, an owned server's
		// holds the Inventory of that name.
		keys := []relatedresource.Key{{Name: name}}
		if h.inventories == nil {
			return keys, nil
		}
		if inv, err := h.inventories.Cache().Get(seederv1alpha1.InventoryNamespace, name); err == nil {
			if holder := inv.Labels[equinixv1.LabelClaimedBy]; holder != "" && holder != name {
				keys = append(keys, relatedresource.Key{Name: holder})
			}
		}
		return keys, nil
	}
	if inst, ok := node.Labels[equinixv1.LabelInstance]; ok {
		return []relatedresource.Key{{Name: inst}}, nil
	}
	return nil, nil
}

// instancesOfSecret re-runs, when a Secret it may depend on changes, every
// Instance not yet managed and every one whose credentials it holds: a joined
// server's credentials condition follows the project its Secret names.
func (h *Handler) instancesOfSecret(_, name string, _ runtime.Object) ([]relatedresource.Key, error) {
	return h.instancesWhere(func(inst *equinixv1.Instance) bool {
		return inst.Status.Status != equinixv1.PhaseManaged || h.credentials.RefFor(inst.Spec.CredentialsSecret).Name == name
	})
}

// waitingInstances re-runs every Instance that is not yet managed when an
// input it may depend on changes: fixed credentials, a join token, the VIP or
// the cluster version let it continue at once.
func (h *Handler) waitingInstances(_, _ string, _ runtime.Object) ([]relatedresource.Key, error) {
	return h.instancesWhere(func(inst *equinixv1.Instance) bool { return inst.Status.Status != equinixv1.PhaseManaged })
}

func (h *Handler) instancesWhere(keep func(*equinixv1.Instance) bool) ([]relatedresource.Key, error) {
	insts, err := h.instances.Cache().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var keys []relatedresource.Key
	for _, inst := range insts {
		if keep(inst) {
			keys = append(keys, relatedresource.Key{Name: inst.Name})
		}
	}
	return keys, nil
}
