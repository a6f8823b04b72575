// Package inventory is the chain of Seeder's Inventories: the kind
// Harvester's UI writes for a host's Out-of-Band Access and its node power
// actions read. An Inventory in harvester-system, named after its node,
// maps the node (or a server without one) to its BMC; this chain runs the
// hardware kit's steps on it (package internal/hardware), with the BMC as the
// machine (package bmcdriver): facts on the Node, events exactly once,
// power requests one command each, behind maintenance mode. What it adds
// is the Inventory's own: where it may be, its node, the Secret it names,
// a poll at its interval, Seeder's status fields, and standing back while
// the real Seeder is installed.
package inventory

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	"github.com/rancher/wrangler/v3/pkg/relatedresource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/fencing"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/hardware"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	seedercontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/bmcdriver"
)

// Handler names; no remove handler, so nothing is persisted under them.
const (
	HandlerSync = "inventory-hardware"
	watchNodes  = "inventory-watch-nodes"
)

// Settings are the parts of the configuration the chain reads.
type Settings struct {
	// PollInterval paces the checks of a power action's effect.
	PollInterval time.Duration
	// BMCTimeout bounds one request to a BMC.
	BMCTimeout time.Duration
	// SeederCheck is how often the chain looks for the real Seeder.
	SeederCheck time.Duration
	// PowerFresh is how old the power an Inventory shows may get between
	// its polls (0: left to the polls).
	PowerFresh time.Duration
}

// Handler holds the chain and what it reads and writes.
type Handler struct {
	ctx         context.Context
	settings    Settings
	steps       *hardware.Steps
	inventories seedercontrollers.InventoryController
	// written are the chain's own latest status writes of Inventories.
	written *common.Writes[*seederv1alpha1.Inventory]
	nodes   corecontrollers.NodeCache
	// nodeWrites are the chains' latest writes of Nodes.
	nodeWrites *common.NodeWrites
	// secrets reads the one Secret an Inventory names, by name: never a
	// list or a watch.
	secrets typedcorev1.SecretsGetter
	// liveNodes reads a Node from the API server once, when an Inventory
	// is first bound to it.
	liveNodes typedcorev1.NodesGetter
	driver    *bmcdriver.Driver
	recorder  record.EventRecorder
	seeder    *seederGuard
	// webhook and schema take over Seeder's admission webhook and the
	// Inventory CRD's schema once Seeder no longer runs.
	webhook *seederWebhook
	schema  *inventorySchema
	// specs pace the status writes after Harvester's power requests.
	specs *specClock
	// intervals remember the polling intervals told clamped.
	intervals *onceEach
	// fence is the fencing step (nil unless --fencing).
	fence *fencing.Fencer
	// instances are the Instances of owned pools (nil unless
	// --owned-pools): the node of a server a pool claimed is bound.
	instances equinixcontrollers.InstanceCache

	// now is the chain's clock (time.Now when nil).
	now func() time.Time
}

// Register wires the Inventories: a handler of their own, a watch that
// re-runs an Inventory when its Node changes (maintenance mode, the node
// appearing), and the look-out for the real Seeder and its leftovers, with
// the live CRD's schema. Each Inventory polls its BMC at its own interval
// through EnqueueAfter; its Secret is read in each pass that needs the
// BMC, so a fixed password is tried at the next one.
func Register(ctx context.Context, deps *common.Deps) error {
	cfg := deps.Cfg
	check := cfg.SeederCheckInterval
	if check <= 0 {
		check = DefaultSeederCheck
	}
	h := &Handler{
		ctx:         ctx,
		settings:    Settings{PollInterval: cfg.PollInterval, BMCTimeout: cfg.BMCTimeout, SeederCheck: check, PowerFresh: cfg.BMCPowerFreshness},
		steps:       hardware.NewSteps(ctx, deps, hardware.NoReclaims),
		inventories: deps.Inventories(),
		written:     common.NewWrites[*seederv1alpha1.Inventory](deps.Inventories().Informer().GetStore()),
		nodes:       deps.Nodes().Cache(),
		nodeWrites:  deps.NodeWrites(),
		secrets:     deps.K8s().CoreV1(),
		liveNodes:   deps.K8s().CoreV1(),
		driver:      deps.BMCs(),
		recorder:    deps.Recorder(),
		specs:       newSpecClock(),
		intervals:   newOnceEach(),
		fence:       fencing.New(ctx, deps),
	}
	if cfg.OwnedPools {
		h.instances = deps.Instances().Cache()
	}
	h.webhook = &seederWebhook{k8s: deps.K8s(), recorder: deps.Recorder()}
	schema, err := newInventorySchema(deps.APIExtensions().CustomResourceDefinitions(), deps.Recorder())
	if err != nil {
		return err
	}
	h.schema = schema
	leases := func(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error) {
		return deps.K8s().CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	h.seeder = newSeederGuard(deps.CRDs, leases, deps.Recorder(), h.wakeAll, h.afterSeederCheck)
	// Before any handler runs, so that none acts beside a Seeder found at
	// start, and the live schema is checked (and taken over) first.
	h.seeder.check(ctx)
	deps.Inventories().OnChange(ctx, HandlerSync, h.Sync)
	go h.seeder.run(ctx, check)
	go func() {
		// Log out of every BMC as the controller stops.
		<-ctx.Done()
		h.driver.Close()
	}()
	relatedresource.Watch(ctx, watchNodes, h.inventoryOfNode, common.AfterNamespaced(deps.Inventories(), common.RelatedDelay), deps.Nodes())
	return nil
}

// afterSeederCheck takes over what Seeder left while it does not run: its
// orphaned webhook, and the CRD's schema when it lacks the addon's fields
// (every Inventory is then written again). A failure is logged: the next
// check tries again.
func (h *Handler) afterSeederCheck(ctx context.Context, state seederState) {
	if state == seederRunning {
		// Seeder owns the CRD and the Inventories meanwhile, and applies
		// its own schema when it starts: the schema is checked again once
		// it stops.
		h.schema.forget()
		return
	}
	if state == seederLeftovers {
		if err := h.webhook.takeOver(ctx); err != nil {
			logrus.Warnf("taking over Seeder's webhook: %v", err)
		}
	}
	updated, err := h.schema.check(ctx, true)
	if err != nil {
		logrus.Warnf("checking the Inventory CRD's schema: %v", err)
	}
	if updated {
		h.wakeAll()
	}
}

// inventoryOfNode maps a Node to the Inventory named after it, when there
// is one.
func (h *Handler) inventoryOfNode(_, name string, _ runtime.Object) ([]relatedresource.Key, error) {
	if _, err := h.inventories.Cache().Get(seederv1alpha1.InventoryNamespace, name); err != nil {
		return nil, nil //nolint:nilerr // no Inventory: nothing to run
	}
	return []relatedresource.Key{{Namespace: seederv1alpha1.InventoryNamespace, Name: name}}, nil
}

// wakeAll runs every Inventory again (the real Seeder went away).
func (h *Handler) wakeAll() {
	invs, err := h.inventories.Cache().List("", labels.Everything())
	if err != nil {
		return
	}
	for _, inv := range invs {
		h.inventories.Enqueue(inv.Namespace, inv.Name)
	}
}

func (h *Handler) clock() time.Time {
	if h.now != nil {
		return h.now()
	}
	return time.Now()
}
