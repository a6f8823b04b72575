// Package ownedserver is the provider of servers people own (--mode
// hardware --owned-pools): each Instance claims a free Seeder Inventory
// (claim.go), sets a one-time network boot and powers the server on
// through its BMC, into the installer the boot endpoint hands it
// (boot.go, bootclaims.go), power-cycles it while its node stays not
// Ready (remediate.go), and on release powers it off and frees the claim
// (release.go). Every BMC command goes through the hardware mode's one
// bmcdriver, shared with the Inventories' chain.
package ownedserver

import (
	"context"
	"sync"
	"time"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	"github.com/rancher/wrangler/v3/pkg/relatedresource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	seedercontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/joininfo"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/bmcdriver"
)

// Names of the chains for servers people own: their own, so that their
// finalizers are not the equinix mode's (both modes may run in one
// cluster, each on its own objects).
var names = provision.Names{Instance: "instance-owned", Pool: "instancepool-owned"}

// Settings are the parts of the configuration the provider reads.
type Settings struct {
	// Namespace holds the console-password Secrets.
	Namespace string
	// BMCTimeout bounds one request to a BMC.
	BMCTimeout time.Duration
}

// Provider holds what the provider's steps read and keep.
type Provider struct {
	// ctx ends when the controller stops; BMC calls use it.
	ctx      context.Context
	settings Settings

	inventories seedercontrollers.InventoryController
	// addressPools hand out the servers' static management addresses;
	// read and written through the apiserver (see address.go).
	addressPools seedercontrollers.AddressPoolController
	instances    equinixcontrollers.InstanceCache
	// instanceStatus writes the steps the boot endpoint sees into the
	// Instances' status.
	instanceStatus equinixcontrollers.InstanceClient
	// instanceWrites are this process's latest writes of Instances'
	// status, the Instance chain's included.
	instanceWrites *common.Writes[*equinixv1.Instance]
	pools          equinixcontrollers.InstancePoolCache
	nodes          corecontrollers.NodeCache
	// nodeWrites are the chains' latest writes of Nodes.
	nodeWrites *common.NodeWrites
	secrets    corecontrollers.SecretCache
	// k8s reads the BMC Secret an Inventory names.
	k8s      kubernetes.Interface
	bmcs     *bmcdriver.Driver
	joinInfo *joininfo.Resolver
	recorder record.EventRecorder
	// owned is what the provider keeps of its claims.
	owned *ownedState
	// imageSlots makes counting the servers booting from images and
	// storing one more's intent one step (see takeImageSlot).
	imageSlots sync.Mutex
	// media is what the boot endpoint needs to serve a claim's boot image
	// (virtual media, UEFI HTTP boot): its loaders and its key.
	media *bootImages
}

var _ provision.Provider = (*Provider)(nil)

// New is the mode's provider of servers people own: built once per Deps,
// by the first to ask (its chains, the boot endpoint), without starting
// anything.
func New(ctx context.Context, deps *common.Deps) (*Provider, error) {
	return common.Shared(deps, providerKey{}, func() (*Provider, error) {
		cfg := deps.Cfg
		return &Provider{
			ctx:         ctx,
			settings:    Settings{Namespace: cfg.Namespace, BMCTimeout: cfg.BMCTimeout},
			inventories: deps.Inventories(), addressPools: deps.AddressPools(), instances: deps.Instances().Cache(), instanceStatus: deps.Instances(),
			instanceWrites: deps.InstanceWrites(), pools: deps.Pools().Cache(),
			nodes: deps.Nodes().Cache(), nodeWrites: deps.NodeWrites(), secrets: deps.Secrets().Cache(),
			k8s: deps.K8s(), bmcs: deps.BMCs(), joinInfo: deps.JoinInfo(), recorder: deps.Recorder(),
			owned: newOwnedState(deps.Inventories().Informer().GetStore()),
			media: newBootImages(cfg.BootLoadersDir, deps.Secrets(), cfg.Namespace),
		}, nil
	})
}

// providerKey names the provider among the shared values of Deps.
type providerKey struct{}

// Watch wires what wakes the Instances and pools besides their own
// objects: a changed Inventory wakes the Instance that holds it and every
// one still waiting for a server, and every pool (a server freed or added
// is capacity for a rollout's surge).
func (p *Provider) Watch(ctx context.Context, deps *common.Deps) error {
	relatedresource.WatchClusterScoped(ctx, "instance-owned-watch-inventories", p.instancesOfInventory,
		common.After(deps.Instances(), common.RelatedDelay), deps.Inventories())
	relatedresource.WatchClusterScoped(ctx, "instancepool-owned-watch-inventories", provision.EveryPool(deps.Pools().Cache()),
		common.After(deps.Pools(), common.RelatedDelay), deps.Inventories())
	// An AddressPool created, corrected or with an address freed: the
	// Instances waiting for an address of it.
	relatedresource.WatchClusterScoped(ctx, "instance-owned-watch-addresspools", p.waitingForAddress,
		common.After(deps.Instances(), common.RelatedDelay), deps.AddressPools())
	// The join token, the cluster's address and its version: an Instance
	// waits for them before it claims and boots a server.
	instances := common.After(deps.Instances(), common.RelatedDelay)
	relatedresource.WatchClusterScoped(ctx, "instance-owned-watch-secrets", common.OnlyInputs(deps.InputSecret, p.notBooted), instances, deps.Secrets())
	relatedresource.WatchClusterScoped(ctx, "instance-owned-watch-configmaps", common.OnlyInputs(deps.InputConfigMap, p.notBooted), instances, deps.ConfigMaps())
	relatedresource.WatchClusterScoped(ctx, "instance-owned-watch-settings", common.OnlyInputs(common.InputSetting, p.notBooted), instances, deps.Settings())
	return nil
}

// notBooted re-runs every owned Instance whose server has not been booted
// yet: what it joins with changed.
func (p *Provider) notBooted(_, _ string, _ runtime.Object) ([]relatedresource.Key, error) {
	insts, err := p.instances.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var keys []relatedresource.Key
	for _, inst := range insts {
		if p.Handles(&inst.Spec.InstanceTemplate) && inst.Status.NetworkBootRequestedAt == nil {
			keys = append(keys, relatedresource.Key{Name: inst.Name})
		}
	}
	return keys, nil
}

// Names are the chains' names for servers people own.
func (p *Provider) Names() provision.Names { return names }

// Traits says that Harvester's power actions reach the servers, through
// their Inventories, in maintenance mode, and that the boot endpoint sees
// each step of their boot.
func (p *Provider) Traits() provision.Traits {
	return provision.Traits{PowerActions: true, BootSteps: true}
}

// Handles the templates with spec.servers.
func (p *Provider) Handles(t *equinixv1.InstanceTemplate) bool { return t.Owned() }

// Steps starts the provider's part of a pass.
func (p *Provider) Steps(pass *provision.Pass) provision.Steps { return &run{Pass: pass, p: p} }

// Prepare adds nothing: status.server is the claimed Inventory.
func (p *Provider) Prepare(*equinixv1.InstanceStatus) {}

// Forget drops nothing: a claim's memory ends with its release.
func (p *Provider) Forget(string) {}

// instancesOfInventory re-runs the Instance that holds a changed
// Inventory, and every owned Instance still waiting for a server.
func (p *Provider) instancesOfInventory(_, _ string, obj runtime.Object) ([]relatedresource.Key, error) {
	var holder string
	if inv, ok := obj.(*seederv1alpha1.Inventory); ok && inv != nil {
		holder = inv.Labels[equinixv1.LabelClaimedBy]
	}
	insts, err := p.instances.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var keys []relatedresource.Key
	for _, inst := range insts {
		if p.Handles(&inst.Spec.InstanceTemplate) && (inst.Name == holder || inst.Status.Server == "") {
			keys = append(keys, relatedresource.Key{Name: inst.Name})
		}
	}
	return keys, nil
}

// waitingForAddress re-runs every owned Instance that waits for an address
// of a changed AddressPool: one that names it and has none yet.
func (p *Provider) waitingForAddress(namespace, name string, _ runtime.Object) ([]relatedresource.Key, error) {
	if namespace != seederv1alpha1.InventoryNamespace {
		return nil, nil
	}
	insts, err := p.instances.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var keys []relatedresource.Key
	for _, inst := range insts {
		if p.Handles(&inst.Spec.InstanceTemplate) && inst.Spec.Servers.AddressPool == name && inst.Status.ManagementAddress == "" &&
			!bootAsked(&inst.Status) {
			keys = append(keys, relatedresource.Key{Name: inst.Name})
		}
	}
	return keys, nil
}
