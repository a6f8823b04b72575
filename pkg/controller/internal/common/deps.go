// Package common holds what the controllers share: the Deps every chain's
// Register takes what it uses from, Events of the reason's type, the input
// filters of their watches, the delayed enqueue of related changes, the
// reads of their own writes, and who owns what (a Node, a claimed
// Inventory, a provider's pools and Instances). The reconcile skeleton is
// package reconcile.
package common

import (
	"context"
	"fmt"
	"sync"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	"github.com/rancher/wrangler/v3/pkg/generic"
	corev1 "k8s.io/api/core/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextv1client "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	harvesterv1beta1 "github.com/harvester/harvester-equinix-addon/pkg/apis/harvesterhci.io/v1beta1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/ledger"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/nodedevice"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	"github.com/harvester/harvester-equinix-addon/pkg/generated/clientset/versioned"
	lbclient "github.com/harvester/harvester-equinix-addon/pkg/generated/clientset/versioned/typed/loadbalancer.harvesterhci.io/v1beta1"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	harvestercontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/harvesterhci.io/v1beta1"
	seedercontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/joininfo"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/bmcdriver"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// Deps is what setup builds once per start and hands to every chain's
// Register. Each of its parts is built the first time a chain asks for it,
// and kept: a mode builds, caches and watches only what its chains use,
// two chains asking get the same thing, and nothing a chain is handed is
// nil. A handler never keeps Deps: it takes only what it uses.
type Deps struct {
	Cfg *config.Config

	ctx  context.Context
	kube kubernetes.Interface
	// machineEvents is a client of its own for the machines' Events: its
	// own share of the client-side limit, so that a fleet's backlog of
	// them never holds up the recorder's.
	machineEvents kubernetes.Interface
	meta          metadata.Interface
	typed         versioned.Interface
	apiext        apiextclient.Interface
	dynamic       dynamic.Interface
	kinds         Kinds
	handles       Handles

	clusterID      lazy[string]
	pools          lazy[equinixcontrollers.InstancePoolController]
	instances      lazy[equinixcontrollers.InstanceController]
	elasticIPs     lazy[equinixcontrollers.ElasticIPController]
	elasticIPPools lazy[equinixcontrollers.ElasticIPPoolController]
	inventories    lazy[seedercontrollers.InventoryController]
	addressPools   lazy[seedercontrollers.AddressPoolController]
	nodes          lazy[corecontrollers.NodeController]
	services       lazy[corecontrollers.ServiceController]
	secrets        lazy[corecontrollers.SecretController]
	configMaps     lazy[corecontrollers.ConfigMapController]
	settings       lazy[harvestercontrollers.SettingController]
	nodeWrites     lazy[*NodeWrites]
	instanceWrites lazy[*Writes[*equinixv1.Instance]]
	metal          lazy[metal.Provider]
	bmcs           lazy[*bmcdriver.Driver]
	secretLookup   lazy[*credentials.Lookup]
	credentials    lazy[*credentials.Resolver]
	joinInfo       lazy[*joininfo.Resolver]
	releases       lazy[*harvester.ReleaseChecker]
	plans          lazy[*metal.PlanCatalog]
	ledger         lazy[*ledger.Ledger]
	recorder       lazy[record.EventRecorder]
	matcher        lazy[*nodedevice.Matcher]
	shared         sharedValues

	mu sync.Mutex
	// watched are the kinds of the controllers handed out, and trimErr
	// the first cache that could not be trimmed.
	watched []schema.GroupVersionKind
	trimErr error
}

// Kinds are the generated controllers of each API group, all on one shared
// controller factory. A controller exists for the factory only once Deps
// hands it out.
type Kinds struct {
	Equinix   equinixcontrollers.Interface
	Seeder    seedercontrollers.Interface
	Harvester harvestercontrollers.Interface
	Core      corecontrollers.Interface
}

// Handles are what one chain makes and another uses. Setup says which
// chain makes each; a chain that uses one asks Deps for it, and it is
// built on first use, by whichever chain comes first.
type Handles struct {
	// DriftMarker notes that a joined Instance's device is gone: the
	// Equinix Metal provider (the sweep finds them).
	DriftMarker func(context.Context, *Deps) (DriftMarker, error)
	// NodeFacts are the hardware facts of an Instance's device that its
	// Node lacks: the Equinix Metal provider's (the Node chain puts them on
	// in its own patch).
	NodeFacts func(context.Context, *Deps) (NodeFacts, error)
	// BootClaims are the open claims of servers people own: the owned
	// servers' provider's (the boot endpoint serves them).
	BootClaims func(context.Context, *Deps) (BootClaims, error)
	// BootServer serves the boot endpoint: the process's relay, which
	// every replica listens on, or a listener of the controllers' own.
	BootServer func(context.Context, *Deps) (BootServer, error)
}

// NewDeps builds the plain clients (they cost no call) and leaves every
// other part to its first use. ctx is the controllers' lifetime.
func NewDeps(ctx context.Context, restConfig *rest.Config, cfg *config.Config, kinds Kinds, handles Handles) (*Deps, error) {
	kube, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	machineEvents, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("machine events client: %w", err)
	}
	meta, err := metadata.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	typed, err := versioned.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("typed client: %w", err)
	}
	apiext, err := apiextclient.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("apiextensions client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	if handles.DriftMarker == nil || handles.NodeFacts == nil || handles.BootClaims == nil || handles.BootServer == nil {
		return nil, fmt.Errorf("setup names no maker for a handle: %+v", handles)
	}
	return &Deps{Cfg: cfg, ctx: ctx, kube: kube, machineEvents: machineEvents, meta: meta, typed: typed, kinds: kinds, handles: handles,
		apiext: apiext, dynamic: dyn}, nil
}

// ClusterID tags every Metal object the addon creates: the configured ID,
// or the kube-system namespace's UID, which lives as long as the cluster
// does. It is read once, waiting for the apiserver as long as it takes.
func (d *Deps) ClusterID() (string, error) {
	return d.clusterID.get(func() (string, error) {
		if d.Cfg.ClusterID != "" {
			return d.Cfg.ClusterID, nil
		}
		var id string
		err := UntilReachable(d.ctx, StartupBackoff, func(ctx context.Context) error {
			ns, err := d.kube.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("reading namespace kube-system for the cluster ID (or set --cluster-id): %w", err)
			}
			id = string(ns.UID)
			return nil
		})
		return id, err
	})
}

// Pools are the InstancePools.
func (d *Deps) Pools() equinixcontrollers.InstancePoolController {
	return d.pools.must(func() equinixcontrollers.InstancePoolController { return watch(d, d.kinds.Equinix.InstancePool()) })
}

// Instances are the Instances.
func (d *Deps) Instances() equinixcontrollers.InstanceController {
	return d.instances.must(func() equinixcontrollers.InstanceController { return watch(d, d.kinds.Equinix.Instance()) })
}

// ElasticIPs are the ElasticIPs.
func (d *Deps) ElasticIPs() equinixcontrollers.ElasticIPController {
	return d.elasticIPs.must(func() equinixcontrollers.ElasticIPController { return watch(d, d.kinds.Equinix.ElasticIP()) })
}

// ElasticIPPools offer blocks of Elastic IPs to LoadBalancer Services.
func (d *Deps) ElasticIPPools() equinixcontrollers.ElasticIPPoolController {
	return d.elasticIPPools.must(func() equinixcontrollers.ElasticIPPoolController { return watch(d, d.kinds.Equinix.ElasticIPPool()) })
}

// IPPools are harvester-load-balancer's, read and written through a plain
// client: without an informer the addon starts on a cluster where
// harvester-load-balancer is missing.
func (d *Deps) IPPools() lbclient.IPPoolInterface { return d.typed.LoadbalancerV1beta1().IPPools() }

// Inventories are Seeder's.
func (d *Deps) Inventories() seedercontrollers.InventoryController {
	return d.inventories.must(func() seedercontrollers.InventoryController { return watch(d, d.kinds.Seeder.Inventory()) })
}

// AddressPools are Seeder's, from which servers people own take static
// management addresses.
func (d *Deps) AddressPools() seedercontrollers.AddressPoolController {
	return d.addressPools.must(func() seedercontrollers.AddressPoolController { return watch(d, d.kinds.Seeder.AddressPool()) })
}

// Nodes are the cluster's Nodes.
func (d *Deps) Nodes() corecontrollers.NodeController {
	return d.nodes.must(func() corecontrollers.NodeController { return watch(d, d.kinds.Core.Node()) })
}

// Services are the cluster's Services.
func (d *Deps) Services() corecontrollers.ServiceController {
	return d.services.must(func() corecontrollers.ServiceController { return watch(d, d.kinds.Core.Service()) })
}

// Secrets are the addon's labelled Secrets in its namespace (the cache
// holds no other).
func (d *Deps) Secrets() corecontrollers.SecretController {
	return d.secrets.must(func() corecontrollers.SecretController { return watch(d, d.kinds.Core.Secret()) })
}

// ConfigMaps are the ConfigMaps of the addon's namespace.
func (d *Deps) ConfigMaps() corecontrollers.ConfigMapController {
	return d.configMaps.must(func() corecontrollers.ConfigMapController { return watch(d, d.kinds.Core.ConfigMap()) })
}

// Settings are Harvester's.
func (d *Deps) Settings() harvestercontrollers.SettingController {
	return d.settings.must(func() harvestercontrollers.SettingController { return watch(d, d.kinds.Harvester.Setting()) })
}

// NodeWrites are the chains' own latest writes of Nodes, which a Node read
// through it reflects before the cache does.
func (d *Deps) NodeWrites() *NodeWrites {
	return d.nodeWrites.must(func() *NodeWrites { return NewNodeWrites(d.Nodes().Informer().GetStore()) })
}

// InstanceWrites are the latest writes of Instances' status by this
// process: the Instance chain's, and the boot endpoint's steps of an
// owned server's boot. Each starts from the other's latest write rather
// than from the cache, which shows it a moment later: the two write the
// same status while a server boots, and an older copy only conflicts.
func (d *Deps) InstanceWrites() *Writes[*equinixv1.Instance] {
	return d.instanceWrites.must(func() *Writes[*equinixv1.Instance] {
		return NewWrites[*equinixv1.Instance](d.Instances().Informer().GetStore())
	})
}

// K8s is a plain client for what has no cache here (a Node read live, the
// pods of a node to drain, a Secret read by name).
func (d *Deps) K8s() kubernetes.Interface { return d.kube }

// MachineEvents writes the machines' events as Kubernetes Events.
func (d *Deps) MachineEvents() typedcorev1.EventsGetter { return d.machineEvents.CoreV1() }

// CRDs reads a CRD's metadata (the Inventories' chain looks for Seeder's).
func (d *Deps) CRDs(ctx context.Context, name string) (*metav1.PartialObjectMetadata, error) {
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	return d.meta.Resource(crds).Get(ctx, name, metav1.GetOptions{})
}

// APIExtensions reads and updates the Inventory CRD (the Inventories'
// chain checks its live schema).
func (d *Deps) APIExtensions() apiextv1client.ApiextensionsV1Interface {
	return d.apiext.ApiextensionsV1()
}

// Addons are Harvester's Addons in harvester-system, read and patched
// through a plain client by name (the seeder mode keeps the
// harvester-seeder Addon pointed at its chart).
func (d *Deps) Addons() dynamic.ResourceInterface {
	addons := schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "addons"}
	return d.dynamic.Resource(addons).Namespace(seederv1alpha1.SeederAddonNamespace)
}

// HarvesterSetting reads one of Harvester's Settings by name, live: fencing
// reads vm-force-reset-policy, and keeps no cache of every Setting (some
// hold keys).
func (d *Deps) HarvesterSetting(ctx context.Context, name string) (*harvesterv1beta1.Setting, error) {
	return d.typed.HarvesterhciV1beta1().Settings().Get(ctx, name, metav1.GetOptions{})
}

// Upgrades lists Harvester's Upgrades by metadata (their state is a label):
// fencing stands back while one is under way, as Harvester's node-down
// handling does.
func (d *Deps) Upgrades(ctx context.Context) (*metav1.PartialObjectMetadataList, error) {
	upgrades := schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "upgrades"}
	return d.meta.Resource(upgrades).Namespace(harvester.UpgradeNamespace).List(ctx, metav1.ListOptions{})
}

// Metal is the Equinix Metal API, with its limiter and metrics.
func (d *Deps) Metal() (metal.Provider, error) {
	return d.metal.get(func() (metal.Provider, error) {
		cfg := d.Cfg
		p, err := metal.NewProvider(metal.Options{
			BaseURL:           cfg.MetalAPIURL,
			Timeout:           cfg.MetalTimeout,
			RequestsPerSecond: cfg.MetalRequestsPerSecond,
			Burst:             cfg.MetalBurst,
			Registerer:        metrics.Registerer(),
		})
		if err != nil {
			return nil, fmt.Errorf("metal provider: %w", err)
		}
		return p, nil
	})
}

// BMCs hands out the machines of BMCs: one driver, so that one BMC has one
// session whichever chain asks.
func (d *Deps) BMCs() *bmcdriver.Driver {
	return d.bmcs.must(func() *bmcdriver.Driver { return bmcdriver.New(bmcdriver.Options{}) })
}

// SecretLookup reads Secrets outside the labelled cache's view by metadata
// only: a Secret's existence and owner, never its data.
func (d *Deps) SecretLookup() *credentials.Lookup {
	return d.secretLookup.must(func() *credentials.Lookup {
		secrets := corev1.SchemeGroupVersion.WithResource("secrets")
		return credentials.NewLookup(d.Secrets().Cache(), func(namespace, name string) (*metav1.PartialObjectMetadata, error) {
			return d.meta.Resource(secrets).Namespace(namespace).Get(d.ctx, name, metav1.GetOptions{})
		})
	})
}

// Credentials are the Equinix Metal credentials Secrets.
func (d *Deps) Credentials() *credentials.Resolver {
	return d.credentials.must(func() *credentials.Resolver {
		return credentials.NewResolver(d.SecretLookup(), d.Cfg.Namespace, d.Cfg.SecretName)
	})
}

// JoinInfo is what a new server joins with: the cluster's URL, its token,
// its version.
func (d *Deps) JoinInfo() *joininfo.Resolver {
	return d.joinInfo.must(func() *joininfo.Resolver {
		return joininfo.NewResolver(d.Cfg, d.ConfigMaps().Cache(), d.SecretLookup(), d.Settings().Cache())
	})
}

// Releases checks a release's ISO exists before a server is made for it;
// nil when --check-release-artifacts is off, which its users check.
func (d *Deps) Releases() *harvester.ReleaseChecker {
	return d.releases.must(func() *harvester.ReleaseChecker {
		if !d.Cfg.CheckReleaseArtifacts {
			return nil
		}
		return harvester.NewReleaseChecker(d.Cfg.ReleaseTransport, d.Cfg.MetalTimeout)
	})
}

// Plans is the Metal plans list, listed at most hourly for every reader.
func (d *Deps) Plans() *metal.PlanCatalog {
	return d.plans.must(func() *metal.PlanCatalog { return metal.NewPlanCatalog(metal.DefaultPlanCatalogTTL, nil) })
}

// Ledger remembers every Metal project and metro the addon made objects in.
func (d *Deps) Ledger() *ledger.Ledger {
	return d.ledger.must(func() *ledger.Ledger { return ledger.New(d.ConfigMaps(), d.Cfg.Namespace) })
}

// Recorder records Events about the addon's objects.
func (d *Deps) Recorder() record.EventRecorder {
	return d.recorder.must(func() record.EventRecorder { return NewRecorder(d.ctx, d.kube) })
}

// Matcher finds the Metal device of a Node, for every chain that acts on
// nodes it did not provision; one, so that its remembered matches serve
// them all.
func (d *Deps) Matcher() *nodedevice.Matcher {
	return d.matcher.must(func() *nodedevice.Matcher { return nodedevice.NewMatcher(d.Instances().Cache()) })
}

// DriftMarker is Handles.DriftMarker's.
func (d *Deps) DriftMarker() (DriftMarker, error) { return d.handles.DriftMarker(d.ctx, d) }

// NodeFacts is Handles.NodeFacts'.
func (d *Deps) NodeFacts() (NodeFacts, error) { return d.handles.NodeFacts(d.ctx, d) }

// BootClaims is Handles.BootClaims'.
func (d *Deps) BootClaims() (BootClaims, error) { return d.handles.BootClaims(d.ctx, d) }

// BootServer is Handles.BootServer's.
func (d *Deps) BootServer() (BootServer, error) { return d.handles.BootServer(d.ctx, d) }

// Watched are the kinds of every controller handed out so far, whose REST
// mappings the factories look up as they start; an error if a cache could
// not be trimmed.
func (d *Deps) Watched() ([]schema.GroupVersionKind, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]schema.GroupVersionKind(nil), d.watched...), d.trimErr
}

// watch records c's kind and keeps the field managers' records
// (metadata.managedFields) out of its cache. No controller reads them, and
// they are a large share of a Node or an Instance that several clients
// have written: at 2,000 servers, memory and every deep copy of a cached
// object. An update that carries no managedFields leaves the stored ones
// as they are.
func watch[C generic.ControllerMeta](d *Deps, c C) C {
	err := c.Informer().SetTransform(DropManagedFields)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.watched = append(d.watched, c.GroupVersionKind())
	if err != nil && d.trimErr == nil {
		d.trimErr = fmt.Errorf("trimming the %s cache: %w", c.GroupVersionKind().Kind, err)
	}
	return c
}

// DropManagedFields is the caches' transform; a deletion tombstone passes
// as it is.
func DropManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// Shared is the one value of key among d's shared values, which build
// makes on first use: a chain whose handler another chain uses (a Handle)
// builds it through Shared, so that the chain and its user hold the same.
func Shared[T any](d *Deps, key any, build func() (T, error)) (T, error) {
	return get[T](&d.shared, key, build)
}
