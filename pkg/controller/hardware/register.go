// Package hardware is the hardware chain: what Seeder's embedded mode gives
// on-prem nodes, for the servers under the addon's nodes. It puts a
// machine's facts on its Node (the manufacturer, model and serialNumber
// labels the Harvester UI reads, and the plan's specs as annotations),
// forwards the machine's events as Kubernetes Events, each exactly once,
// carries out the power requests of spec.powerState and
// spec.rebootRequestedAt (only while a joined node is in Harvester
// maintenance mode, one call per request), and puts a node whose server
// the provider is about to take back into maintenance mode at once.
//
// The chain talks to machines through pkg/hardware only. Its steps work on
// a target (target.go): an Instance, whose machine is a device of the Metal
// driver (package metaldriver), or a BMCInventory, a node the addon did not
// provision, whose machine is its BMC (package bmcdriver). The steps are
// the same for both.
package hardware

import (
	"context"
	"time"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	"github.com/rancher/wrangler/v3/pkg/relatedresource"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/common"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/joininfo"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/bmcdriver"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/metaldriver"
)

// Handler names; no remove handler, so nothing is persisted under them.
const (
	HandlerInstance     = "instance-hardware"
	HandlerBMCInventory = "bmcinventory-hardware"
	watchNodes          = "hardware-watch-nodes"
	watchBMCNodes       = "bmcinventory-watch-nodes"
	watchBMCSecrets     = "bmcinventory-watch-secrets"

	// indexByDevice indexes Instances by their device ID, to hand a
	// device's news to its Instance.
	indexByDevice = "equinix.harvesterhci.io/instances-by-device"
	// indexByNodeName indexes BMCInventories by the node they name: a
	// node's changes reach its inventory, and a second inventory of one
	// node is found.
	indexByNodeName = "equinix.harvesterhci.io/bmcinventories-by-node"
	// indexBySecret indexes BMCInventories by their credentials Secret: a
	// fixed password is tried at once.
	indexBySecret = "equinix.harvesterhci.io/bmcinventories-by-secret"
)

// Settings are the parts of the configuration the chain reads.
type Settings struct {
	// Namespace holds the ConfigMap of the projects' event log positions.
	Namespace string
	// PollInterval paces a power request under way; MetalTimeout bounds
	// one call, and twice it is how long a call whose answer was lost may
	// still land.
	PollInterval, MetalTimeout time.Duration
	// BMCTimeout bounds one request to a BMC.
	BMCTimeout time.Duration
}

// Handler holds the chain and what it reads and writes.
type Handler struct {
	ctx      context.Context
	settings Settings

	instances equinixcontrollers.InstanceController
	nodes     corecontrollers.NodeController
	// written are the chains' latest writes of Nodes.
	written     *common.NodeWrites
	events      typedcorev1.EventsGetter
	credentials *credentials.Resolver
	joinInfo    *joininfo.Resolver
	recorder    record.EventRecorder
	metal       *metaldriver.Driver
	// outbox writes the Instances' machine Events off their workers.
	outbox *outbox

	bmcInventories equinixcontrollers.BMCInventoryController
	// bmcWritten are the chain's own latest status writes of inventories.
	bmcWritten *common.Writes[*v1.BMCInventory]
	secrets    *credentials.Lookup
	bmc        *bmcdriver.Driver

	// now is the chain's clock (time.Now when nil).
	now func() time.Time
}

// Register wires the chain: a handler on Instances, a watch that re-runs
// an Instance when its Node changes (maintenance mode lets a waiting power
// request go; the node to forward events to appears), and the Metal
// driver's poll, which wakes the Instances whose devices have news.
func Register(ctx context.Context, deps *common.Deps) (*Handler, error) {
	cfg := deps.Cfg
	h := &Handler{
		ctx: ctx,
		settings: Settings{Namespace: cfg.Namespace, PollInterval: cfg.PollInterval, MetalTimeout: cfg.MetalTimeout,
			BMCTimeout: cfg.BMCTimeout},
		instances:      deps.Instances,
		nodes:          deps.Nodes,
		written:        deps.NodeWrites,
		events:         deps.MachineEvents,
		credentials:    deps.Credentials,
		joinInfo:       deps.JoinInfo,
		recorder:       deps.Recorder,
		bmcInventories: deps.BMCInventories,
		secrets:        deps.SecretLookup,
		bmc:            bmcdriver.New(bmcdriver.Options{}),
		bmcWritten:     common.NewWrites[*v1.BMCInventory](deps.BMCInventories.Informer().GetStore()),
	}
	h.metal = metaldriver.New(metaldriver.Options{
		Provider:            deps.Metal,
		Plans:               deps.Plans,
		EventsInterval:      off(cfg.DeviceEventsInterval),
		TerminationInterval: off(cfg.TerminationCheckInterval),
		Store:               &logPositions{configMaps: deps.ConfigMaps, namespace: cfg.Namespace},
		Notify:              h.wake,
	})
	deps.Instances.Cache().AddIndexer(indexByDevice, func(i *v1.Instance) ([]string, error) {
		if i.Status.InstanceID == "" {
			return nil, nil
		}
		return []string{i.Status.InstanceID}, nil
	})
	h.outbox = newOutbox(ctx, h.postEvent, deps.Instances.Enqueue)
	h.outbox.start()
	deps.Instances.OnChange(ctx, HandlerInstance, h.SyncInstance)
	relatedresource.WatchClusterScoped(ctx, watchNodes, instanceOfNode, common.After(deps.Instances, common.RelatedDelay), deps.Nodes)
	go h.metal.Run(ctx, h.projects)
	h.registerBMC(ctx, deps)
	return h, nil
}

// registerBMC wires the BMCInventories: a handler of their own, and
// watches that re-run an inventory when its Node changes (maintenance mode
// lets a waiting power request go; a node appears) or its Secret does (a
// fixed password; the driver's hold still paces the logins). Each polls its BMC
// at its own interval through EnqueueAfter.
func (h *Handler) registerBMC(ctx context.Context, deps *common.Deps) {
	deps.BMCInventories.Cache().AddIndexer(indexByNodeName, func(i *v1.BMCInventory) ([]string, error) {
		return []string{i.Spec.NodeName}, nil
	})
	deps.BMCInventories.Cache().AddIndexer(indexBySecret, func(i *v1.BMCInventory) ([]string, error) {
		return []string{i.Spec.CredentialsSecret.Name}, nil
	})
	deps.BMCInventories.OnChange(ctx, HandlerBMCInventory, h.SyncBMCInventory)
	go func() {
		// Log out of every BMC as the controller stops.
		<-ctx.Done()
		h.bmc.Close()
	}()
	enqueue := common.After(deps.BMCInventories, common.RelatedDelay)
	relatedresource.WatchClusterScoped(ctx, watchBMCNodes, h.inventoriesBy(indexByNodeName, ""), enqueue, deps.Nodes)
	relatedresource.WatchClusterScoped(ctx, watchBMCSecrets, h.inventoriesBy(indexBySecret, deps.Cfg.Namespace), enqueue, deps.Secrets)
}

// off maps the configuration's 0 (off) onto the driver's negative.
func off(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// instanceOfNode maps a Node to the Instance it was installed for.
func instanceOfNode(_, name string, obj runtime.Object) ([]relatedresource.Key, error) {
	node, ok := obj.(*corev1.Node)
	if !ok || node == nil {
		return []relatedresource.Key{{Name: name}}, nil
	}
	if inst, ok := node.Labels[v1.LabelInstance]; ok {
		return []relatedresource.Key{{Name: inst}}, nil
	}
	return nil, nil
}

func (h *Handler) clock() time.Time {
	if h.now != nil {
		return h.now()
	}
	return time.Now()
}
