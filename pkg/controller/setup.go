// Package controller wires every controller of the addon onto one shared lasso
// controller factory and starts them.
package controller

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/rancher/lasso/pkg/cache"
	"github.com/rancher/lasso/pkg/client"
	lassocontroller "github.com/rancher/lasso/pkg/controller"
	"github.com/rancher/wrangler/v3/pkg/generated/controllers/core"
	"github.com/rancher/wrangler/v3/pkg/generic"
	"github.com/rancher/wrangler/v3/pkg/schemes"
	"github.com/rancher/wrangler/v3/pkg/start"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	harvesterv1beta1 "github.com/harvester/harvester-equinix-addon/pkg/apis/harvesterhci.io/v1beta1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/bgp"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/devicehardware"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/elasticip"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/instance"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/instancepool"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/ledger"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/nodedevice"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/inventory"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/node"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/sweep"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	"github.com/harvester/harvester-equinix-addon/pkg/generated/clientset/versioned"
	equinixfactory "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io"
	harvesterfactory "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/harvesterhci.io"
	seederfactory "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/metal.harvesterhci.io"
	harvesterpkg "github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/joininfo"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/bmcdriver"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
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

// watchedKinds are the kinds each mode's controllers cache: their REST
// mappings are resolved, once, before the factories start.
var watchedKinds = map[string][]schema.GroupVersionKind{
	config.ModeEquinix: {
		equinixv1.SchemeGroupVersion.WithKind("InstancePool"),
		equinixv1.SchemeGroupVersion.WithKind("Instance"),
		equinixv1.SchemeGroupVersion.WithKind("ElasticIP"),
		equinixv1.SchemeGroupVersion.WithKind("ElasticIPPool"),
		harvesterv1beta1.SchemeGroupVersion.WithKind("Setting"),
		corev1.SchemeGroupVersion.WithKind("Node"),
		corev1.SchemeGroupVersion.WithKind("Secret"),
		corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		corev1.SchemeGroupVersion.WithKind("Service"),
	},
	config.ModeHardware: {
		seederv1alpha1.SchemeGroupVersion.WithKind(seederv1alpha1.InventoryKind),
		corev1.SchemeGroupVersion.WithKind("Node"),
	},
}

// ownedPoolKinds are what the hardware mode caches besides when it runs
// the pools of servers people own (--owned-pools): the pools and their
// Instances, and what a server's join configuration is made of.
var ownedPoolKinds = []schema.GroupVersionKind{
	equinixv1.SchemeGroupVersion.WithKind("InstancePool"),
	equinixv1.SchemeGroupVersion.WithKind("Instance"),
	harvesterv1beta1.SchemeGroupVersion.WithKind("Setting"),
	corev1.SchemeGroupVersion.WithKind("Secret"),
	corev1.SchemeGroupVersion.WithKind("ConfigMap"),
}

// ResolveKinds fills the shared discovery cache. The factories look kinds up
// when they start and fail for good if the apiserver is away then; once
// cached, the lookups need no apiserver, and the informers retry by
// themselves.
func (f *Factories) ResolveKinds(mode string, ownedPools bool) error {
	kinds := watchedKinds[mode]
	if ownedPools {
		kinds = append(slices.Clone(kinds), ownedPoolKinds...)
	}
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
func NewFactories(restConfig *rest.Config, namespace string) (*Factories, error) {
	rateLimiter := workqueue.NewTypedItemExponentialFailureRateLimiter[any](5*time.Millisecond, 5*time.Minute)
	// wrangler's schemes.All holds every type its generated controllers (ours and
	// core) registered; our clientset's scheme alone lacks the core types.
	clients, err := client.NewSharedClientFactory(restConfig, &client.SharedClientFactoryOptions{Scheme: schemes.All})
	if err != nil {
		return nil, fmt.Errorf("client factory: %w", err)
	}
	shared := newSharedControllerFactory(clients, rateLimiter, namespace)
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

func newSharedControllerFactory(cf client.SharedClientFactory, rl workqueue.TypedRateLimiter[any], namespace string) lassocontroller.SharedControllerFactory {
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
	})
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

// Start registers every controller and starts the factories.
func Start(ctx context.Context, restConfig *rest.Config, cfg *config.Config, opts ...Option) error {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	k8s, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	var f *Factories
	var clusterID string
	err = untilReachable(ctx, startupBackoff, func(ctx context.Context) error {
		if f, err = NewFactories(restConfig, cfg.Namespace); err != nil {
			return err
		}
		if err = f.ResolveKinds(cfg.Mode, cfg.OwnedPools); err != nil {
			return err
		}
		if cfg.Mode == config.ModeHardware {
			// The hardware mode tags nothing in a Metal project.
			return nil
		}
		clusterID, err = resolveClusterID(ctx, k8s, cfg.ClusterID)
		return err
	})
	if err != nil {
		return err
	}
	newDeps, register := newEquinixDeps, registerEquinix
	if cfg.Mode == config.ModeHardware {
		newDeps = newHardwareDeps
		register = func(ctx context.Context, deps *common.Deps) error { return registerHardware(ctx, deps, o.bootRelay) }
	}
	deps, err := newDeps(ctx, restConfig, k8s, clusterID, cfg, f)
	if err != nil {
		return err
	}
	if err := trimCaches(deps); err != nil {
		return err
	}
	if err := register(ctx, deps); err != nil {
		return err
	}
	return start.All(ctx, cfg.Threads, f.Equinix, f.Harvester, f.Metal, f.Core)
}

// startupBackoff paces the start-up's first calls while the apiserver is
// unreachable: quickly at first, then every 10 seconds.
var startupBackoff = wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Jitter: 0.1, Cap: 10 * time.Second, Steps: math.MaxInt32}

// untilReachable runs step until it succeeds or ctx ends. A pod starting while
// the apiserver restarts (an upgrade, a control-plane node reboot) waits for it
// here, unready, instead of exiting into a crash loop. The steps are the
// start-up's reads, with no side effects to undo.
func untilReachable(ctx context.Context, backoff wait.Backoff, step func(ctx context.Context) error) error {
	// A manual loop, not wait.ExponentialBackoff: that one stops for good
	// once the delay reaches Cap, and this must wait as long as it takes.
	for {
		last := step(ctx)
		if last == nil {
			return nil
		}
		logrus.Warnf("waiting for the Kubernetes API: %v", last)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), last)
		case <-time.After(backoff.Step()):
		}
	}
}

// registerHardware wires the hardware mode's one chain: Seeder's
// Inventories.
func registerHardware(ctx context.Context, deps *common.Deps, relay *bootendpoint.Relay) error {
	if deps.Cfg.OwnedPools {
		// The Instances' remove handler first: no BMC command before its
		// finalizer is stored.
		owned := instance.RegisterOwned(ctx, deps)
		instancepool.RegisterOwned(ctx, deps)
		if err := startBootEndpoint(ctx, deps, owned.BootClaims(), relay); err != nil {
			return err
		}
	}
	inventory.Register(ctx, deps)
	return nil
}

// newHardwareDeps builds what the Inventories' chain reads: no Metal
// provider, no Secret cache (the chain reads the one Secret an Inventory
// names, by name), no join information.
func newHardwareDeps(ctx context.Context, restConfig *rest.Config, k8s kubernetes.Interface, _ string, cfg *config.Config, f *Factories) (*common.Deps, error) {
	core := f.Core.Core().V1()
	meta, err := metadata.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	machineEvents, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("machine events client: %w", err)
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	deps := &common.Deps{
		Cfg:           cfg,
		Inventories:   f.Metal.Metal().V1alpha1().Inventory(),
		BMCs:          bmcdriver.New(bmcdriver.Options{}),
		Nodes:         core.Node(),
		NodeWrites:    common.NewNodeWrites(core.Node().Informer().GetStore()),
		K8s:           k8s,
		MachineEvents: machineEvents.CoreV1(),
		CRDs: func(ctx context.Context, name string) (*metav1.PartialObjectMetadata, error) {
			return meta.Resource(crds).Get(ctx, name, metav1.GetOptions{})
		},
		Recorder: common.NewRecorder(ctx, k8s),
	}
	if cfg.OwnedPools {
		addOwnedPoolDeps(deps, f, secretMetadata(ctx, meta))
	}
	return deps, nil
}

// addOwnedPoolDeps adds what the pools of servers people own read: the
// pools and Instances, and the join information (the cluster's URL, its
// token, its version) their servers' install configurations carry.
func addOwnedPoolDeps(deps *common.Deps, f *Factories, secretMeta credentials.MetadataFunc) {
	eq := f.Equinix.Equinix().V1()
	core := f.Core.Core().V1()
	hv := f.Harvester.Harvesterhci().V1beta1()
	secrets := credentials.NewLookup(core.Secret().Cache(), secretMeta)
	deps.Pools, deps.Instances = eq.InstancePool(), eq.Instance()
	deps.Secrets, deps.ConfigMaps, deps.Settings = core.Secret(), core.ConfigMap(), hv.Setting()
	deps.SecretLookup = secrets
	deps.JoinInfo = joininfo.NewResolver(deps.Cfg, core.ConfigMap().Cache(), secrets, hv.Setting().Cache())
}

// registerEquinix wires every controller of the equinix mode, in order: the
// Instance chains register their remove handler before anything else
// touches Instances, and the sweep marks drift through the registered
// Instance handler.
func registerEquinix(ctx context.Context, deps *common.Deps) error {
	instances := instance.Register(ctx, deps)
	if err := instancepool.Register(ctx, deps); err != nil {
		return err
	}
	instanceHardware, err := devicehardware.Register(ctx, deps)
	if err != nil {
		return err
	}
	matcher := nodedevice.NewMatcher(deps.Instances.Cache())
	if err := node.Register(ctx, deps, instanceHardware, matcher); err != nil {
		return err
	}
	elasticip.Register(ctx, deps, matcher)
	if deps.Cfg.BGP {
		if err := bgp.Register(ctx, deps, matcher); err != nil {
			return err
		}
	}
	return sweep.Register(ctx, deps, instances)
}

func newEquinixDeps(ctx context.Context, restConfig *rest.Config, k8s kubernetes.Interface, clusterID string, cfg *config.Config, f *Factories) (*common.Deps, error) {
	provider, err := metal.NewProvider(metal.Options{
		BaseURL:           cfg.MetalAPIURL,
		Timeout:           cfg.MetalTimeout,
		RequestsPerSecond: cfg.MetalRequestsPerSecond,
		Burst:             cfg.MetalBurst,
		Registerer:        metrics.Registerer(),
	})
	if err != nil {
		return nil, fmt.Errorf("metal provider: %w", err)
	}
	eq := f.Equinix.Equinix().V1()
	core := f.Core.Core().V1()
	hv := f.Harvester.Harvesterhci().V1beta1()
	meta, err := metadata.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	machineEvents, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("machine events client: %w", err)
	}
	typed, err := versioned.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("typed client: %w", err)
	}
	secrets := credentials.NewLookup(core.Secret().Cache(), secretMetadata(ctx, meta))
	var releases *harvesterpkg.ReleaseChecker
	if cfg.CheckReleaseArtifacts {
		releases = harvesterpkg.NewReleaseChecker(cfg.ReleaseTransport, cfg.MetalTimeout)
	}
	return &common.Deps{
		Cfg:            cfg,
		ClusterID:      clusterID,
		Pools:          eq.InstancePool(),
		Instances:      eq.Instance(),
		ElasticIPs:     eq.ElasticIP(),
		ElasticIPPools: eq.ElasticIPPool(),
		IPPools:        typed.LoadbalancerV1beta1().IPPools(),
		Nodes:          core.Node(),
		NodeWrites:     common.NewNodeWrites(core.Node().Informer().GetStore()),
		Services:       core.Service(),
		Secrets:        core.Secret(),
		ConfigMaps:     core.ConfigMap(),
		Settings:       hv.Setting(),
		K8s:            k8s,
		MachineEvents:  machineEvents.CoreV1(),
		Metal:          provider,
		SecretLookup:   secrets,
		Credentials:    credentials.NewResolver(secrets, cfg.Namespace, cfg.SecretName),
		JoinInfo:       joininfo.NewResolver(cfg, core.ConfigMap().Cache(), secrets, hv.Setting().Cache()),
		Ledger:         ledger.New(core.ConfigMap(), cfg.Namespace),
		Releases:       releases,
		Plans:          metal.NewPlanCatalog(metal.DefaultPlanCatalogTTL, nil),
		Recorder:       common.NewRecorder(ctx, k8s),
	}, nil
}

// resolveClusterID is the configured ID, or the kube-system namespace's UID,
// which lives as long as the cluster does.
func resolveClusterID(ctx context.Context, k8s kubernetes.Interface, configured string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	ns, err := k8s.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading namespace kube-system for the cluster ID (or set --cluster-id): %w", err)
	}
	return string(ns.UID), nil
}

// secretMetadata asks the apiserver for a Secret's metadata only, so that a
// Secret outside the labelled cache is seen (to exist, and whose it is)
// without its data ever reaching the process.
func secretMetadata(ctx context.Context, meta metadata.Interface) credentials.MetadataFunc {
	secrets := corev1.SchemeGroupVersion.WithResource("secrets")
	return func(namespace, name string) (*metav1.PartialObjectMetadata, error) {
		return meta.Resource(secrets).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	}
}
