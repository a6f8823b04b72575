// Package controller wires every controller of the addon onto one shared lasso
// controller factory and starts them.
package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/rancher/lasso/pkg/cache"
	"github.com/rancher/lasso/pkg/client"
	lassocontroller "github.com/rancher/lasso/pkg/controller"
	"github.com/rancher/wrangler/v3/pkg/generated/controllers/core"
	"github.com/rancher/wrangler/v3/pkg/generic"
	"github.com/rancher/wrangler/v3/pkg/schemes"
	"github.com/rancher/wrangler/v3/pkg/start"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/addonspec"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/bgp"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/elasticip"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/instance"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/instancepool"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/inventory"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/node"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision/equinixmetal"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision/ownedserver"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/sweep"
	equinixfactory "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io"
	harvesterfactory "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/harvesterhci.io"
	seederfactory "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/metal.harvesterhci.io"
)

// Factories is every wrangler factory, all sharing one lasso controller factory
// so that one rate limiter and one set of caches serve every controller. A
// factory's controllers and caches exist only once a chain asks for them,
// so a mode never lists or watches a kind it does not use.
type Factories struct {
	Equinix   *equinixfactory.Factory
	Harvester *harvesterfactory.Factory
	Metal     *seederfactory.Factory
	Core      *core.Factory

	clients client.SharedClientFactory
}

// ResolveKinds fills the shared discovery cache. The factories look up the
// kinds of their controllers when they start and fail for good if the
// apiserver is away then; once cached, the lookups need no apiserver, and
// the informers retry by themselves.
func (f *Factories) ResolveKinds(kinds []schema.GroupVersionKind) error {
	for _, gvk := range kinds {
		if _, _, err := f.clients.ResourceForGVK(gvk); err != nil {
			return fmt.Errorf("resolving %s: %w", gvk.Kind, err)
		}
	}
	return nil
}

// NewFactories builds the factories on one shared controller factory with an
// explicit per-item exponential backoff (5 ms up to 5 minutes): a failing Metal
// call is retried quickly at first and then no more often than every 5 minutes.
//
// Secrets and ConfigMaps are cached from the addon's namespace only, so its RBAC
// needs no cluster-wide Secret access, and Secrets only when they carry the
// addon's label.
func NewFactories(restConfig *rest.Config, namespace string, kindWorkers map[schema.GroupVersionKind]int) (*Factories, error) {
	rateLimiter := workqueue.NewTypedItemExponentialFailureRateLimiter[any](5*time.Millisecond, 5*time.Minute)
	// wrangler's schemes.All holds every type its generated controllers (ours and
	// core) registered; our clientset's scheme alone lacks the core types.
	clients, err := client.NewSharedClientFactory(restConfig, &client.SharedClientFactoryOptions{Scheme: schemes.All})
	if err != nil {
		return nil, fmt.Errorf("client factory: %w", err)
	}
	shared := newSharedControllerFactory(clients, rateLimiter, namespace, kindWorkers)
	opts := &generic.FactoryOptions{SharedControllerFactory: shared}
	eq, err := equinixfactory.NewFactoryFromConfigWithOptions(restConfig, opts)
	if err != nil {
		return nil, fmt.Errorf("equinix factory: %w", err)
	}
	hv, err := harvesterfactory.NewFactoryFromConfigWithOptions(restConfig, opts)
	if err != nil {
		return nil, fmt.Errorf("harvester factory: %w", err)
	}
	mt, err := seederfactory.NewFactoryFromConfigWithOptions(restConfig, opts)
	if err != nil {
		return nil, fmt.Errorf("metal factory: %w", err)
	}
	co, err := core.NewFactoryFromConfigWithOptions(restConfig, opts)
	if err != nil {
		return nil, fmt.Errorf("core factory: %w", err)
	}
	return &Factories{Equinix: eq, Harvester: hv, Metal: mt, Core: co, clients: clients}, nil
}

func newSharedControllerFactory(cf client.SharedClientFactory, rl workqueue.TypedRateLimiter[any], namespace string,
	kindWorkers map[schema.GroupVersionKind]int) lassocontroller.SharedControllerFactory {
	secretGVK := corev1.SchemeGroupVersion.WithKind("Secret")
	cacheFactory := cache.NewSharedCachedFactory(cf, &cache.SharedCacheFactoryOptions{
		KindNamespace: map[schema.GroupVersionKind]string{
			secretGVK: namespace,
			corev1.SchemeGroupVersion.WithKind("ConfigMap"): namespace,
		},
		// Only the Secrets the addon reads or writes enter the process;
		// Harvester keeps many others in its namespace.
		KindTweakList: map[schema.GroupVersionKind]cache.TweakListOptionsFunc{
			secretGVK: func(o *metav1.ListOptions) { o.LabelSelector = equinixv1.LabelSecret },
		},
	})
	return lassocontroller.NewSharedControllerFactory(cacheFactory, &lassocontroller.SharedControllerFactoryOptions{
		DefaultRateLimiter: rl,
		KindWorkers:        kindWorkers,
	})
}

// Register is what every chain offers: it wires the chain's handlers and
// watches onto the controllers it takes from deps, starting nothing that
// needs the caches synced.
type Register func(ctx context.Context, deps *common.Deps) error

// chains are what each mode runs, in order. The servers' chains come
// first: their remove handlers store the finalizer before anything else
// touches an Instance, so no device is created, nor BMC command sent,
// before it. A chain behind a flag (--bgp, --owned-pools) checks it itself.
var chains = map[string][]Register{
	config.ModeEquinix: {
		servers(equinixmetal.New),
		node.Register,
		elasticip.Register,
		bgp.Register,
		sweep.Register,
	},
	config.ModeSeeder: {
		ownedServers,
		serveBootEndpoint,
		// Harvester's upgrade rewrites the Addon this mode is installed as.
		addonspec.Register,
		inventory.Register,
	},
}

// servers registers the Instance and pool chains on the provider
// newProvider builds (once per Deps, see provision.Provider): the
// Instances' remove handler first, then what wakes the provider's objects.
func servers[P provision.Provider](newProvider func(context.Context, *common.Deps) (P, error)) Register {
	return func(ctx context.Context, deps *common.Deps) error {
		p, err := newProvider(ctx, deps)
		if err != nil {
			return err
		}
		instance.Register(ctx, deps, p)
		instancepool.Register(ctx, deps, p)
		return p.Watch(ctx, deps)
	}
}

// ownedServers are the chains of servers people own, with --owned-pools.
func ownedServers(ctx context.Context, deps *common.Deps) error {
	if !deps.Cfg.OwnedPools {
		return nil
	}
	return servers(ownedserver.New)(ctx, deps)
}

// handles names the chain that makes each handle one chain hands another.
func handles(bootRelay *bootendpoint.Relay) common.Handles {
	return common.Handles{
		// The sweep notes a gone device to the Metal provider, and the
		// Node chain takes a new Node's facts from it.
		DriftMarker: func(ctx context.Context, deps *common.Deps) (common.DriftMarker, error) {
			return equinixmetal.New(ctx, deps)
		},
		NodeFacts: func(ctx context.Context, deps *common.Deps) (common.NodeFacts, error) {
			return equinixmetal.New(ctx, deps)
		},
		// The boot endpoint serves the owned provider's open claims.
		BootClaims: func(ctx context.Context, deps *common.Deps) (common.BootClaims, error) {
			p, err := ownedserver.New(ctx, deps)
			if err != nil {
				return nil, err
			}
			return p.BootClaims(), nil
		},
		BootServer: func(_ context.Context, deps *common.Deps) (common.BootServer, error) {
			return bootServer(deps.Cfg, bootRelay), nil
		},
	}
}

// Option changes how Start runs the controllers.
type Option func(*options)

type options struct {
	bootRelay *bootendpoint.Relay
}

// WithBootRelay hands the boot endpoint of owned pools to relay, the
// process's listener that every replica serves, instead of a listener of
// the controllers' own.
func WithBootRelay(relay *bootendpoint.Relay) Option {
	return func(o *options) { o.bootRelay = relay }
}

// Controllers are the chains of one mode, registered on their factories
// and not started yet.
type Controllers struct {
	Factories *Factories
	deps      *common.Deps
	threads   int
}

// Setup registers the chains of cfg's mode on new factories. Nothing waits
// for the apiserver here but a chain that reads from it once (the cluster
// ID, the boot endpoint's key), which waits as long as it takes.
func Setup(ctx context.Context, restConfig *rest.Config, cfg *config.Config, opts ...Option) (*Controllers, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	registers, ok := chains[cfg.Mode]
	if !ok {
		return nil, fmt.Errorf("--mode %q runs no chains", cfg.Mode)
	}
	f, err := NewFactories(restConfig, cfg.Namespace, kindWorkers(cfg))
	if err != nil {
		return nil, err
	}
	deps, err := common.NewDeps(ctx, restConfig, cfg, common.Kinds{
		Equinix:   f.Equinix.Equinix().V1(),
		Seeder:    f.Metal.Metal().V1alpha1(),
		Harvester: f.Harvester.Harvesterhci().V1beta1(),
		Core:      f.Core.Core().V1(),
	}, handles(o.bootRelay))
	if err != nil {
		return nil, err
	}
	for _, register := range registers {
		if err := register(ctx, deps); err != nil {
			return nil, err
		}
	}
	return &Controllers{Factories: f, deps: deps, threads: cfg.Threads}, nil
}

// kindWorkers are the kinds whose controllers run more workers than
// --threads. With --owned-pools, the Instances' (--owned-threads): a pass
// over a server people own mostly waits for its BMC (a session's set-up,
// the boot override, the power on) and the apiserver, and each BMC takes
// one session at a time whatever the workers (bmcdriver), so five workers
// would boot a pool of twenty five at a time, each in turn waiting for
// another's round trips; the CPU those passes use is small. In the
// equinix mode every Instance's calls share one Metal rate limit, which
// more workers would only queue at.
func kindWorkers(cfg *config.Config) map[schema.GroupVersionKind]int {
	if !cfg.OwnedPools || cfg.OwnedThreads < 1 {
		return nil
	}
	return map[schema.GroupVersionKind]int{equinixv1.SchemeGroupVersion.WithKind("Instance"): cfg.OwnedThreads}
}

// Watched are the kinds of the controllers the chains took: the only ones
// the mode lists, watches and caches.
func (c *Controllers) Watched() ([]schema.GroupVersionKind, error) { return c.deps.Watched() }

// Run resolves the watched kinds, waiting for the apiserver as long as it
// takes, and starts the factories.
func (c *Controllers) Run(ctx context.Context) error {
	kinds, err := c.Watched()
	if err != nil {
		return err
	}
	if err := common.UntilReachable(ctx, common.StartupBackoff, func(context.Context) error { return c.Factories.ResolveKinds(kinds) }); err != nil {
		return err
	}
	f := c.Factories
	return start.All(ctx, c.threads, f.Equinix, f.Harvester, f.Metal, f.Core)
}

// Start sets up the chains of cfg's mode and runs them.
func Start(ctx context.Context, restConfig *rest.Config, cfg *config.Config, opts ...Option) error {
	c, err := Setup(ctx, restConfig, cfg, opts...)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
