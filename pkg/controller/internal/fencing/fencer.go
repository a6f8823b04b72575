// Package fencing is the chain that brings a dead host's VMs back
// (--fencing, seeder mode): a node with an Inventory that stays NotReady
// for the grace period has its server switched off through its BMC (a
// server already off counts), and only then its Node tainted
// node.kubernetes.io/out-of-service=nodeshutdown:NoExecute, which lets
// Kubernetes delete the node's pods and detach their volumes at once, so
// that Harvester starts the VMs on other hosts. When the node is Ready
// again the taint goes; with --fencing-power-on the addon switches the
// server back on itself once its volumes are detached.
//
// The step runs inside the Inventory chain's pass (package inventory): the
// BMC is the pass's machine, from the one driver that keeps one session
// per BMC, and every step is a condition of the Inventory (Fenced) and an
// Event on the Node. The power-off's intent is stored before its command,
// so that a restart never sends a second one.
package fencing

import (
	"context"
	"sync"
	"time"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	seedercontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// Settings are the fencing part of the configuration.
type Settings struct {
	// MaxFenced is the most nodes fenced (or being fenced) at once.
	MaxFenced int
	// GracePeriod is how long a node stays NotReady before it is fenced.
	GracePeriod time.Duration
	// PowerOn has the addon switch a fenced server back on once the
	// node's volumes are detached.
	PowerOn bool
	// OwnNode is the node the controller runs on.
	OwnNode string
}

// Fencer is the chain's state shared by the Inventory chain's workers:
// what the caches say, and which nodes this process counts as fenced, so
// that two workers never both take the last place under the bound.
type Fencer struct {
	ctx         context.Context
	settings    Settings
	nodes       corecontrollers.NodeCache
	nodeWrites  *common.NodeWrites
	liveNodes   typedcorev1.NodesGetter
	inventories seedercontrollers.InventoryCache
	// instances are the Instances of pools of servers people own, nil
	// without --owned-pools: a pool's server still joining is not fenced.
	instances equinixcontrollers.InstanceCache
	recorder  record.EventRecorder

	mu sync.Mutex
	// active are the Inventories (by name) this process last saw fenced or
	// being fenced, and those it reserved a place for.
	active map[string]bool
}

// New returns the fencing step, or nil when --fencing is off.
func New(ctx context.Context, deps *common.Deps) *Fencer {
	cfg := deps.Cfg
	if !cfg.Fencing {
		return nil
	}
	metrics.FencedNodes.Set(0)
	var instances equinixcontrollers.InstanceCache
	if cfg.OwnedPools {
		instances = deps.Instances().Cache()
	}
	return &Fencer{
		ctx: ctx,
		settings: Settings{MaxFenced: cfg.FencingMaxFenced, GracePeriod: cfg.FencingGracePeriod, PowerOn: cfg.FencingPowerOn,
			OwnNode: cfg.NodeName},
		nodes:       deps.Nodes().Cache(),
		nodeWrites:  deps.NodeWrites(),
		liveNodes:   deps.K8s().CoreV1(),
		inventories: deps.Inventories().Cache(),
		instances:   instances,
		recorder:    deps.Recorder(),
		active:      map[string]bool{},
	}
}

// Forget drops an Inventory that is gone.
func (f *Fencer) Forget(name string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.active, name)
	metrics.FencedNodes.Set(float64(len(f.active)))
}
