// Package bgp gives kube-vip and MetalLB in BGP mode what the Equinix
// Metal CCM (v3.3 and later) would: the project's BGP config (local, the
// configured ASN) if it has none, one IPv4 session per server of a Node
// (the addon's, and any other Node matched to its device), and the CCM's
// node annotations metal.equinix.com/bgp-peers-{n}-* and
// network-4-private, computed by package bgpannotate. The password never
// goes into an annotation.
//
// With a node selector (--bgp-node-selector, the CCM's bgpNodeSelector)
// only the Nodes it matches peer; the others cost no call.
//
// Only annotations the addon wrote are ever removed: it marks them with
// equinix.harvesterhci.io/bgp-device. They go when the device or its
// session goes (a session deleted while its device lives is opened again,
// as the CCM does), and when the node stops matching the selector (its
// session stays: the addon never deletes one). There is no remove handler: a finalizer on Nodes would
// make the addon a dependency of every node deletion.
package bgp

import (
	"context"
	"fmt"
	"sync"
	"time"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	"github.com/rancher/wrangler/v3/pkg/relatedresource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/nodedevice"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// Handler names.
const (
	HandlerPeers   = "node-bgp-peers"
	watchInstances = "bgp-watch-instances"
)

// Settings are the parts of the configuration the chain reads.
type Settings struct {
	// LocalASN is asked for when the project has no BGP config.
	LocalASN int64
	// Resync is how often a node's session is checked at rest.
	Resync time.Duration
	// Nodes selects the Nodes that peer (the CCM's bgpNodeSelector); nil
	// means every Node.
	Nodes labels.Selector
}

// Handler holds the chain and what it reads and writes.
type Handler struct {
	ctx      context.Context
	settings Settings
	nodes    corecontrollers.NodeController
	// written are the chains' latest writes of Nodes.
	written     *common.NodeWrites
	instances   equinixcontrollers.InstanceCache
	metal       metal.Provider
	credentials *credentials.Resolver
	matcher     *nodedevice.Matcher
	recorder    record.EventRecorder

	mu sync.Mutex
	// checked is the last time each node's session was found in place.
	checked map[string]checked
	// enabled remembers the projects whose BGP config was seen.
	enabled map[string]bool
	// reported is the last problem reported for each node, so a node that
	// cannot peer is told once, not at every heartbeat.
	reported map[string]string
	now      func() time.Time
}

type checked struct {
	device string
	at     time.Time
}

// Register wires the chain on Nodes, and re-runs a Node when its
// Instance changes (its device appears or goes); nothing without --bgp.
func Register(ctx context.Context, deps *common.Deps) error {
	if !deps.Cfg.BGP {
		return nil
	}
	selector, err := labels.Parse(deps.Cfg.BGPNodeSelector)
	if err != nil {
		return fmt.Errorf("--bgp-node-selector: %w", err)
	}
	provider, err := deps.Metal()
	if err != nil {
		return err
	}
	h := &Handler{
		ctx:      ctx,
		settings: Settings{LocalASN: deps.Cfg.BGPLocalASN, Resync: deps.Cfg.BGPResync, Nodes: selector},
		nodes:    deps.Nodes(), written: deps.NodeWrites(), instances: deps.Instances().Cache(), metal: provider,
		credentials: deps.Credentials(), matcher: deps.Matcher(), recorder: deps.Recorder(),
		checked: map[string]checked{}, enabled: map[string]bool{}, reported: map[string]string{}, now: time.Now,
	}
	deps.Nodes().OnChange(ctx, HandlerPeers, h.AnnotatePeers)
	relatedresource.WatchClusterScoped(ctx, watchInstances, nodeOfInstance, common.After(deps.Nodes(), common.RelatedDelay), deps.Instances())
	return nil
}

// nodeOfInstance: an Instance's Node has its name.
func nodeOfInstance(_, name string, _ runtime.Object) ([]relatedresource.Key, error) {
	return []relatedresource.Key{{Name: name}}, nil
}
