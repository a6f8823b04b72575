// Package common holds what the controllers share: the bag of clients,
// caches and settings their Register functions pick from (Deps), Events
// of the reason's type, the input filters of their watches, the delayed
// enqueue of related changes and the reads of their own writes. The
// reconcile skeleton is package reconcile.
package common

import (
	"context"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/ledger"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	lbclient "github.com/harvester/harvester-equinix-addon/pkg/generated/clientset/versioned/typed/loadbalancer.harvesterhci.io/v1beta1"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
	harvestercontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/harvesterhci.io/v1beta1"
	seedercontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/joininfo"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/bmcdriver"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// Deps is what setup builds once and hands to every Register function. A
// handler never keeps it: each takes from it only the caches, clients and
// settings it reads.
type Deps struct {
	Cfg *config.Config
	// ClusterID tags every Metal object the addon creates.
	ClusterID string

	Pools      equinixcontrollers.InstancePoolController
	Instances  equinixcontrollers.InstanceController
	ElasticIPs equinixcontrollers.ElasticIPController
	// ElasticIPPools offer blocks of Elastic IPs to LoadBalancer Services.
	ElasticIPPools equinixcontrollers.ElasticIPPoolController
	// IPPools are harvester-load-balancer's, read and written through a
	// plain client: without an informer the addon starts on a cluster
	// where harvester-load-balancer is missing.
	IPPools lbclient.IPPoolInterface
	// Inventories are Seeder's (the hardware mode's only kind).
	Inventories seedercontrollers.InventoryController
	// BMCs hands out the BMC machines of the hardware mode's chains: one
	// driver, so that one BMC has one session whichever chain asks.
	BMCs *bmcdriver.Driver
	// CRDs reads a CRD's metadata (the hardware mode looks for Seeder's).
	CRDs  func(ctx context.Context, name string) (*metav1.PartialObjectMetadata, error)
	Nodes corecontrollers.NodeController
	// NodeWrites are the chains' own latest writes of Nodes, which a Node
	// read through it reflects before the cache does.
	NodeWrites *NodeWrites
	Services   corecontrollers.ServiceController
	Secrets    corecontrollers.SecretController
	ConfigMaps corecontrollers.ConfigMapController
	Settings   harvestercontrollers.SettingController

	// K8s is a plain client for what has no cache here (pods of a node to drain).
	K8s kubernetes.Interface
	// MachineEvents writes the machines' events as Kubernetes Events,
	// through a client of its own: its own share of the client-side limit,
	// so that a fleet's backlog of them never holds up the recorder's.
	MachineEvents typedcorev1.EventsGetter

	Metal metal.Provider
	// SecretLookup reads Secrets outside the labelled cache's view by
	// metadata only.
	SecretLookup *credentials.Lookup
	Credentials  *credentials.Resolver
	JoinInfo     *joininfo.Resolver
	// Releases checks a release's ISO exists before a server is created for
	// it; nil when --check-release-artifacts is off.
	Releases *harvester.ReleaseChecker
	// Plans is the plans list, listed at most hourly for every reader.
	Plans *metal.PlanCatalog
	// Ledger remembers every project and metro the addon made objects in.
	Ledger   *ledger.Ledger
	Recorder record.EventRecorder
}
