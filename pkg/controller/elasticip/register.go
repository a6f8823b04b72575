// Package elasticip keeps each ElasticIP's address assigned to the server of
// the node kube-vip names in its Service's kube-vip.io/vipHost annotation,
// moving it (unassign, then assign) when kube-vip moves, and creates the
// cluster VIP's ElasticIP when the VIP is an Elastic IP of the project.
//
// It follows kube-vip and never fights it: a node kube-vip keeps naming
// while it is not Ready, cordoned or in maintenance is reported, and the
// address stays with it. A move is stored in the status before its first
// call, so a crash or a lost answer is finished by the next pass; the
// address is unassigned only in a move, and Metal refuses to assign it while
// another device has it, so it is never on two devices. Addresses and
// reservations of no ElasticIP are never touched; 401 and 403 stop a pass
// without a further call.
package elasticip

import (
	"context"
	"sync"
	"time"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	"github.com/rancher/wrangler/v3/pkg/relatedresource"
	"k8s.io/client-go/tools/record"

	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/nodedevice"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	lbclient "github.com/harvester/harvester-equinix-addon/pkg/generated/clientset/versioned/typed/loadbalancer.harvesterhci.io/v1beta1"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// Handler names. HandlerRemove is part of the finalizer stored on every
// ElasticIP (wrangler.cattle.io/elasticip-remove): keep them stable.
const (
	HandlerRemove = "elasticip-remove"
	HandlerFollow = "elasticip-follow"
	HandlerVIP    = "elasticip-cluster-vip"
	// HandlerPoolRemove is part of the finalizer stored on every
	// ElasticIPPool (v1.FinalizerElasticIPPool).
	HandlerPoolRemove = "elasticippool-remove"
	HandlerPool       = "elasticippool-offer"
	HandlerServices   = "elasticip-pool-services"
	watchPoolServices = "elasticip-watch-pool-services"
	watchEIPServices  = "elasticip-watch-service-elasticips"
	watchPoolEIPs     = "elasticip-watch-pool-elasticips"
	watchServices     = "elasticip-watch-services"
	watchNodes        = "elasticip-watch-nodes"
	watchInstances    = "elasticip-watch-instances"
	watchSecrets      = "elasticip-watch-secrets"
	watchElasticIPs   = "elasticip-watch-elasticips"
	watchVIP          = "elasticip-watch-vip"

	// Finalizer is what wrangler's OnRemove stores for HandlerRemove.
	Finalizer = "wrangler.cattle.io/" + HandlerRemove
)

// Settings are the parts of the configuration the chain reads.
type Settings struct {
	// Namespace holds the credentials Secrets and ConfigMap vip.
	Namespace string
	// Resync is how often an ElasticIP at rest re-reads its reservation.
	Resync time.Duration
	// VIP makes the chain create the cluster VIP's ElasticIP.
	VIP bool
	// NotReadyGrace is how long kube-vip may keep naming a node that is not
	// Ready before it is reported: kube-vip moves by itself once the node's
	// lease expires, which takes seconds.
	NotReadyGrace time.Duration
}

// Handler holds the chain and what it reads and writes.
type Handler struct {
	// ctx ends when the controller stops; Metal calls use it.
	ctx      context.Context
	settings Settings

	clusterID    string
	eips         equinixcontrollers.ElasticIPController
	pools        equinixcontrollers.ElasticIPPoolController
	ipPools      lbclient.IPPoolInterface
	services     corecontrollers.ServiceCache
	nodes        corecontrollers.NodeCache
	configMapCtl corecontrollers.ConfigMapController
	secrets      corecontrollers.SecretCache
	metal        metal.Provider
	credentials  *credentials.Resolver
	matcher      *nodedevice.Matcher
	recorder     record.EventRecorder

	// verified is when each ElasticIP's assignment was last read from Metal
	// and found where it belongs; until Resync has passed, a pass that finds
	// nothing changed makes no call.
	mu       sync.Mutex
	verified map[string]verification
	// poolChecked is when each pool's granted block was last read.
	poolChecked map[string]time.Time
	now         func() time.Time
}

// Register wires the chain. The remove handler goes first: it stores the
// finalizer before any Metal call, so an assignment the addon makes is
// always one it can take back.
func Register(ctx context.Context, deps *common.Deps) error {
	cfg := deps.Cfg
	clusterID, err := deps.ClusterID()
	if err != nil {
		return err
	}
	provider, err := deps.Metal()
	if err != nil {
		return err
	}
	h := &Handler{
		ctx: ctx,
		settings: Settings{Namespace: cfg.Namespace, Resync: cfg.ElasticIPResync, VIP: cfg.VIPElasticIP,
			NotReadyGrace: notReadyGrace},
		clusterID: clusterID, eips: deps.ElasticIPs(), pools: deps.ElasticIPPools(), ipPools: deps.IPPools(),
		services: deps.Services().Cache(), nodes: deps.Nodes().Cache(),
		configMapCtl: deps.ConfigMaps(), secrets: deps.Secrets().Cache(), metal: provider,
		credentials: deps.Credentials(), matcher: deps.Matcher(), recorder: deps.Recorder(),
		verified: map[string]verification{}, poolChecked: map[string]time.Time{}, now: time.Now,
	}
	deps.ElasticIPs().OnRemove(ctx, HandlerRemove, h.Release)
	deps.ElasticIPs().OnChange(ctx, HandlerFollow, h.Follow)
	// kube-vip moving is what the chain exists for: no delay.
	relatedresource.WatchClusterScoped(ctx, watchServices, h.followersOfService, common.After(deps.ElasticIPs(), 0), deps.Services())
	relatedresource.WatchClusterScoped(ctx, watchNodes, h.followersOfNode, common.After(deps.ElasticIPs(), common.RelatedDelay), deps.Nodes())
	relatedresource.WatchClusterScoped(ctx, watchInstances, h.followersOfInstance, common.After(deps.ElasticIPs(), common.RelatedDelay), deps.Instances())
	relatedresource.WatchClusterScoped(ctx, watchSecrets, common.OnlyInputs(h.credentialsSecret, h.all), common.After(deps.ElasticIPs(), common.RelatedDelay), deps.Secrets())
	relatedresource.WatchClusterScoped(ctx, watchElasticIPs, h.sameAddress, common.After(deps.ElasticIPs(), common.RelatedDelay), deps.ElasticIPs())
	// LoadBalancer Services with addresses of an ElasticIPPool: the pool
	// reserves and offers its block, each such Service gets an ElasticIP
	// of its address, which the handlers above then keep on kube-vip's node.
	deps.ElasticIPPools().OnRemove(ctx, HandlerPoolRemove, h.ReleasePool)
	deps.ElasticIPPools().OnChange(ctx, HandlerPool, h.EnsurePool)
	deps.Services().OnChange(ctx, HandlerServices, h.EnsureServiceElasticIPs)
	relatedresource.Watch(ctx, watchPoolServices, h.servicesOfPool, deps.Services(), deps.ElasticIPPools())
	relatedresource.Watch(ctx, watchEIPServices, h.serviceOfElasticIP, deps.Services(), deps.ElasticIPs())
	relatedresource.WatchClusterScoped(ctx, watchPoolEIPs, h.poolOfElasticIP, deps.ElasticIPPools(), deps.ElasticIPs())
	if h.settings.VIP {
		deps.ConfigMaps().OnChange(ctx, HandlerVIP, h.EnsureVIPElasticIP)
		relatedresource.Watch(ctx, watchVIP, h.vipConfigMap, deps.ConfigMaps(), deps.ElasticIPs())
	}
	return nil
}

// notReadyGrace: kube-vip's lease expires within seconds of its node going
// away, and another node takes the VIP; only a node named for longer is
// worth a report.
const notReadyGrace = 30 * time.Second
