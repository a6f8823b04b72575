// Package bmcinventory is the BMC inventories' controller: a BMCInventory
// maps a node the addon did not provision to its server's BMC, and this
// chain runs the hardware chain's steps (package hardware) on it, with the
// BMC as the machine (package bmcdriver). What it adds is the BMC's own:
// the node it names and the credentials Secret, a poll at the inventory's
// interval, and the BMC's answers as conditions.
package bmcinventory

import (
	"context"
	"time"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	"github.com/rancher/wrangler/v3/pkg/relatedresource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/hardware"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/bmcdriver"
)

// Handler names; no remove handler, so nothing is persisted under them.
const (
	HandlerSync  = "bmcinventory-hardware"
	watchNodes   = "bmcinventory-watch-nodes"
	watchSecrets = "bmcinventory-watch-secrets"

	// indexByNodeName indexes BMCInventories by the node they name: a
	// node's changes reach its inventory, and a second inventory of one
	// node is found.
	indexByNodeName = "equinix.harvesterhci.io/bmcinventories-by-node"
	// indexBySecret indexes BMCInventories by their credentials Secret: a
	// fixed password is tried at once.
	indexBySecret = "equinix.harvesterhci.io/bmcinventories-by-secret" //nolint:gosec // G101: an index's name, not a credential
)

// Settings are the parts of the configuration the chain reads.
type Settings struct {
	// Namespace holds the credentials Secrets.
	Namespace string
	// PollInterval paces a power request under way.
	PollInterval time.Duration
	// BMCTimeout bounds one request to a BMC.
	BMCTimeout time.Duration
}

// Handler holds the chain and what it reads and writes.
type Handler struct {
	settings    Settings
	steps       *hardware.Steps
	inventories equinixcontrollers.BMCInventoryController
	// written are the chain's own latest status writes of inventories.
	written *common.Writes[*v1.BMCInventory]
	nodes   corecontrollers.NodeCache
	// nodeWrites are the chains' latest writes of Nodes.
	nodeWrites *common.NodeWrites
	secrets    *credentials.Lookup
	driver     *bmcdriver.Driver
	recorder   record.EventRecorder

	// now is the chain's clock (time.Now when nil).
	now func() time.Time
}

// Register wires the BMCInventories: a handler of their own, and watches
// that re-run an inventory when its Node changes (maintenance mode lets a
// waiting power request go; a node appears) or its Secret does (a fixed
// password; the driver's hold still paces the logins). Each polls its BMC
// at its own interval through EnqueueAfter.
func Register(ctx context.Context, deps *common.Deps) {
	cfg := deps.Cfg
	h := &Handler{
		settings:    Settings{Namespace: cfg.Namespace, PollInterval: cfg.PollInterval, BMCTimeout: cfg.BMCTimeout},
		steps:       hardware.NewSteps(ctx, deps),
		inventories: deps.BMCInventories,
		written:     common.NewWrites[*v1.BMCInventory](deps.BMCInventories.Informer().GetStore()),
		nodes:       deps.Nodes.Cache(),
		nodeWrites:  deps.NodeWrites,
		secrets:     deps.SecretLookup,
		driver:      bmcdriver.New(bmcdriver.Options{}),
		recorder:    deps.Recorder,
	}
	deps.BMCInventories.Cache().AddIndexer(indexByNodeName, func(i *v1.BMCInventory) ([]string, error) {
		return []string{i.Spec.NodeName}, nil
	})
	deps.BMCInventories.Cache().AddIndexer(indexBySecret, func(i *v1.BMCInventory) ([]string, error) {
		return []string{i.Spec.CredentialsSecret.Name}, nil
	})
	deps.BMCInventories.OnChange(ctx, HandlerSync, h.Sync)
	go func() {
		// Log out of every BMC as the controller stops.
		<-ctx.Done()
		h.driver.Close()
	}()
	enqueue := common.After(deps.BMCInventories, common.RelatedDelay)
	relatedresource.WatchClusterScoped(ctx, watchNodes, h.inventoriesBy(indexByNodeName, ""), enqueue, deps.Nodes)
	relatedresource.WatchClusterScoped(ctx, watchSecrets, h.inventoriesBy(indexBySecret, cfg.Namespace), enqueue, deps.Secrets)
}

// inventoriesBy maps a Node, or a Secret of namespace, to the inventories
// that name it, through index.
func (h *Handler) inventoriesBy(index, namespace string) relatedresource.Resolver {
	return func(ns, name string, _ runtime.Object) ([]relatedresource.Key, error) {
		if ns != namespace {
			return nil, nil
		}
		invs, err := h.inventories.Cache().GetByIndex(index, name)
		if err != nil {
			return nil, err
		}
		keys := make([]relatedresource.Key, 0, len(invs))
		for _, i := range invs {
			keys = append(keys, relatedresource.Key{Name: i.Name})
		}
		return keys, nil
	}
}

func (h *Handler) clock() time.Time {
	if h.now != nil {
		return h.now()
	}
	return time.Now()
}
