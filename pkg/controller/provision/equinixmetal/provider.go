// Package equinixmetal is the provider of Equinix Metal devices (--mode
// equinix): a device created for each Instance (or adopted by its tag
// after a lost answer) and reinstalled with the Harvester installer, its
// ports kept at the pool's network type and VLANs, the join configuration
// taken off it once the node joined, its hardware followed as Seeder's
// embedded mode does for on-prem nodes (facts, events, power requests,
// reclaim notices, health), and the device deleted, with the VLANs no
// server uses, on release. Everything goes through pkg/metal (the hardware
// through pkg/machine/metaldriver).
package equinixmetal

import (
	"context"
	"time"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	"github.com/rancher/wrangler/v3/pkg/relatedresource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/ledger"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/vlans"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/joininfo"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// Names of the chains for Equinix Metal devices. They are the addon's
// first, and stored in the finalizers of every such Instance and pool.
var names = provision.Names{Instance: "instance", Pool: "instancepool"}

// Settings are the parts of the configuration the provider reads.
type Settings struct {
	// MetalTimeout bounds one call and the wait for a create whose answer
	// was lost; CreateBackoff is the first wait after a refused create.
	MetalTimeout, CreateBackoff time.Duration
	// BGP (--bgp) makes servers on a layer-3 management network route
	// Equinix Metal's BGP peers through their private gateway.
	BGP bool
}

// Provider holds what the provider's steps read and keep.
type Provider struct {
	// ctx ends when the controller stops; Metal calls use it so that a
	// shutdown does not wait for them.
	ctx       context.Context
	settings  Settings
	clusterID string

	instances   equinixcontrollers.InstanceController
	nodes       corecontrollers.NodeCache
	metal       metal.Provider
	credentials *credentials.Resolver
	joinInfo    *joininfo.Resolver
	ledger      *ledger.Ledger
	releases    *harvester.ReleaseChecker
	plans       *metal.PlanCatalog

	// hardware is the devices' facts, events, power and health.
	hardware    *deviceHardware
	devices     *deviceCache
	vlanIDs     *vlans.IDCache
	reinstalls  *reinstalls
	adoption    *adoptionLists
	goneDevices *goneDevices
}

var _ provision.Provider = (*Provider)(nil)

// New is the mode's provider of Equinix Metal devices: built once per
// Deps, by the first to ask (its chains, the sweep, the Node chain), without
// starting anything.
func New(ctx context.Context, deps *common.Deps) (*Provider, error) {
	return common.Shared(deps, providerKey{}, func() (*Provider, error) { return build(ctx, deps) })
}

// providerKey names the provider among the shared values of Deps.
type providerKey struct{}

func build(ctx context.Context, deps *common.Deps) (*Provider, error) {
	cfg := deps.Cfg
	clusterID, err := deps.ClusterID()
	if err != nil {
		return nil, err
	}
	api, err := deps.Metal()
	if err != nil {
		return nil, err
	}
	// Shorter than the poll interval, so that polling sees Equinix's progress.
	ttl := min(cfg.PollInterval/2, 5*time.Second)
	return &Provider{
		ctx:       ctx,
		settings:  Settings{MetalTimeout: cfg.MetalTimeout, CreateBackoff: cfg.CreateBackoff, BGP: cfg.BGP},
		clusterID: clusterID,
		instances: deps.Instances(), nodes: deps.Nodes().Cache(), metal: api, credentials: deps.Credentials(),
		joinInfo: deps.JoinInfo(), ledger: deps.Ledger(), releases: deps.Releases(), plans: deps.Plans(),
		hardware: newDeviceHardware(ctx, deps, api),
		devices:  newDeviceCache(ttl), vlanIDs: vlans.NewIDCache(30 * time.Second), reinstalls: newReinstalls(),
		adoption: newAdoptionLists(cfg.PollInterval), goneDevices: newGoneDevices(),
	}, nil
}

// Watch wires what wakes the Instances and pools besides their own
// objects: their credentials Secrets and the inputs of an install (the
// join token, the VIP, the cluster's version); and starts the devices'
// hardware (the driver's poll, the outbox).
func (p *Provider) Watch(ctx context.Context, deps *common.Deps) error {
	instances := common.After(deps.Instances(), common.RelatedDelay)
	relatedresource.WatchClusterScoped(ctx, "instance-watch-secrets", common.OnlyInputs(deps.InputSecret, p.instancesOfSecret), instances, deps.Secrets())
	relatedresource.WatchClusterScoped(ctx, "instance-watch-configmaps", common.OnlyInputs(deps.InputConfigMap, p.waitingInstances), instances, deps.ConfigMaps())
	relatedresource.WatchClusterScoped(ctx, "instance-watch-settings", common.OnlyInputs(common.InputSetting, p.waitingInstances), instances, deps.Settings())
	pools := common.After(deps.Pools(), common.RelatedDelay)
	allPools := provision.EveryPool(deps.Pools().Cache())
	relatedresource.WatchClusterScoped(ctx, "instancepool-watch-secrets", common.OnlyInputs(deps.InputSecret, allPools), pools, deps.Secrets())
	relatedresource.WatchClusterScoped(ctx, "instancepool-watch-configmaps", common.OnlyInputs(deps.InputConfigMap, allPools), pools, deps.ConfigMaps())
	relatedresource.WatchClusterScoped(ctx, "instancepool-watch-settings", common.OnlyInputs(common.InputSetting, allPools), pools, deps.Settings())
	p.hardware.start(ctx)
	return nil
}

// Names are the addon's first chains' names.
func (p *Provider) Names() provision.Names { return names }

// Traits says that Harvester's power actions do not reach a device (its
// power is spec.powerState's); a device is paid for from its creation, so a pool
// checks its release first.
func (p *Provider) Traits() provision.Traits { return provision.Traits{CheckRelease: true} }

// Handles the templates without spec.servers.
func (p *Provider) Handles(t *equinixv1.InstanceTemplate) bool { return !t.Owned() }

// Steps starts the provider's part of a pass.
func (p *Provider) Steps(pass *provision.Pass) provision.Steps { return &run{Pass: pass, p: p} }

// Prepare names the device in the SERVER column.
func (p *Provider) Prepare(st *equinixv1.InstanceStatus) { st.Server = st.InstanceID }

// Forget drops the hardware steps' memory of a deleted Instance (its
// events still to write, its health series); the rest expires.
func (p *Provider) Forget(instance string) { p.hardware.forget(instance) }

// Capacity does not bound a rollout's surge: Equinix Metal answers a
// create it has no capacity for, and the Instance says so.
func (p *Provider) Capacity(_ *equinixv1.InstancePool, _ []*equinixv1.Instance, want int) (int, error) {
	return want, nil
}

// vlanUsers says which VLANs the Instances want, for their garbage collection.
func (p *Provider) vlanUsers() vlans.Users {
	return vlans.Users{Instances: p.instances.Cache(), Credentials: p.credentials, ClusterID: p.clusterID}
}

// instancesOfSecret re-runs, when a Secret it may depend on changes, every
// Instance not yet managed and every one whose credentials it holds: a joined
// server's credentials condition follows the project its Secret names.
func (p *Provider) instancesOfSecret(_, name string, _ runtime.Object) ([]relatedresource.Key, error) {
	return p.instancesWhere(func(inst *equinixv1.Instance) bool {
		return inst.Status.Status != equinixv1.PhaseManaged || p.credentials.RefFor(inst.Spec.CredentialsSecret).Name == name
	})
}

// waitingInstances re-runs every Instance that is not yet managed when an
// input it may depend on changes: fixed credentials, a join token, the VIP or
// the cluster version let it continue at once.
func (p *Provider) waitingInstances(_, _ string, _ runtime.Object) ([]relatedresource.Key, error) {
	return p.instancesWhere(func(inst *equinixv1.Instance) bool { return inst.Status.Status != equinixv1.PhaseManaged })
}

func (p *Provider) instancesWhere(keep func(*equinixv1.Instance) bool) ([]relatedresource.Key, error) {
	insts, err := p.instances.Cache().List(labels.Everything())
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
