// Package provision is the seam between the chains of Instances and pools
// and the providers of whole servers, as package machine is the hardware
// chain's. The Instance chain (package instance) owns the lifecycle: claim
// or create, boot or install, join, remediate, release; the pool chain
// (package instancepool) owns the count. Each asks the mode's Provider for
// what only it knows: Equinix Metal devices (package equinixmetal), servers
// people own (package ownedserver). A provider is a package of its own
// beside them, and one line of the mode's wiring.
package provision

import (
	"context"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
)

// Provider is one source of whole servers. One runs per mode (the install
// that holds its credentials or sessions); it is safe for concurrent use.
// Its package's New builds it, once per Deps and without starting
// anything, for its chains and for the chains it hands something to (see
// common.Handles); Watch then starts it with its chains.
type Provider interface {
	// Watch wires what wakes the provider's Instances and pools besides
	// their own objects and Nodes (its inputs, its servers' news) and
	// starts what it runs in the background.
	Watch(ctx context.Context, deps *common.Deps) error
	// Names are the stems of the names the chains register under for
	// the provider's objects (and so of their finalizers).
	Names() Names
	// Traits are what the chains need to know of the provider's servers.
	Traits() Traits
	// Handles reports whether a template (a pool's, an Instance's) is the
	// provider's. The chains act on, and put their finalizers on, only
	// the objects of their mode's provider.
	Handles(t *equinixv1.InstanceTemplate) bool
	// Steps starts the provider's part of one pass over an Instance.
	Steps(p *Pass) Steps
	// Prepare fills what every status write carries that the provider
	// derives from the rest of the status.
	Prepare(st *equinixv1.InstanceStatus)
	// Forget drops what the provider keeps of a deleted Instance.
	Forget(instance string)

	// CheckPool says, before any server is asked for, what only the
	// provider can tell of a pool's servers: its conditions, and whether
	// creates must wait. insts are the pool's Instances, those being
	// deleted too.
	CheckPool(pool *equinixv1.InstancePool, insts []*equinixv1.Instance) PoolCheck
	// Capacity bounds by what the provider has to offer the want new
	// servers a pool's rollout asks for beyond its count (its surge).
	// current are the pool's Instances of its current template that are
	// not being deleted: those still waiting for a server come first.
	Capacity(pool *equinixv1.InstancePool, current []*equinixv1.Instance, want int) (int, error)
}

// Steps are a provider's part of one pass over one Instance, in the order
// the Instance chain takes them. Each changes the pass's status and
// conditions, stores an intent before a call that must not be sent twice
// (Pass.Persist), and asks to look again (Pass.Requeue); an error is a
// failure of the cluster or of a call that the work queue's backoff
// retries, never a state of the server (that is a condition).
type Steps interface {
	// Provision takes an Instance that has not joined from nothing to a
	// server booting its installer: claim or create, then boot or
	// install. It reports true once the installer is on its way, so that
	// the chain follows the node (it may follow the node itself before a
	// call, with Pass.TrackNode).
	Provision() (booting bool, err error)
	// Follow is the provider's look at a joined server before its node is
	// read. kept is false when the server is lost (the phase then says
	// failed, and the pool replaces the Instance).
	Follow() (kept bool, err error)
	// Joined runs once the node has joined, in the pass that sees it
	// join and every one after.
	Joined() error
	// Remediate acts on a joined server whose node stays not Ready,
	// before the pool's replacement (status.unhealthySince).
	Remediate() error
	// Tend runs at the end of every pass, the release's too, whatever came
	// of the steps before it.
	Tend() error

	// Releasing says what the release of this Instance does, for its
	// Deleting condition.
	Releasing() string
	// Stop stops the server for good once its node is drained: done is
	// true once it cannot come back as the node (deleted, powered off),
	// or there was never one.
	Stop() (done bool, err error)
	// Free gives back what the Instance held, once its node and console
	// Secret are gone.
	Free() error
}

// Names are the stems of a provider's handler names. They are stored:
// wrangler names an OnRemove handler's finalizer after the handler and
// puts it on every object, so a renamed stem strands objects.
type Names struct {
	// Instance is the Instance chain's: <Instance>-remove (the finalizer
	// wrangler.cattle.io/<Instance>-remove), <Instance>-provision.
	Instance string
	// Pool is the pool chain's: <Pool>-remove, <Pool>-sync.
	Pool string
}

// InstanceRemove is the Instance chain's remove handler.
func (n Names) InstanceRemove() string { return n.Instance + "-remove" }

// InstanceProvision is the Instance chain's change handler.
func (n Names) InstanceProvision() string { return n.Instance + "-provision" }

// InstanceFinalizer is the finalizer wrangler stores for InstanceRemove,
// with which the pool creates Instances.
func (n Names) InstanceFinalizer() string { return "wrangler.cattle.io/" + n.InstanceRemove() }

// PoolRemove is the pool chain's remove handler.
func (n Names) PoolRemove() string { return n.Pool + "-remove" }

// PoolSync is the pool chain's change handler.
func (n Names) PoolSync() string { return n.Pool + "-sync" }

// Traits are what the chains need to know of a provider's servers.
type Traits struct {
	// PowerActions is true when Harvester's power actions reach the
	// servers (through their Inventories, in maintenance mode): a node in
	// maintenance mode that is not Ready is then a person's doing, not
	// unhealthy.
	PowerActions bool
	// CheckRelease is true when a pool checks that its release's
	// installer ISO exists before its servers are asked for
	// (--check-release-artifacts): a server paid for from its creation
	// would otherwise run for nothing.
	CheckRelease bool
}

// PoolCheck is what a provider tells of a pool before any server is
// asked for.
type PoolCheck struct {
	// Conditions are set on the pool as they are.
	Conditions []Condition
	// HoldCreates is set when no server may be created now; a condition
	// says why.
	HoldCreates bool
}

// Condition is a condition a provider sets on a pool.
type Condition struct {
	Type    string
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// InstanceCondition returns the condition of that type and status (and,
// when reasons are given, one of them) of the first Instance of insts that
// is not being deleted: what a pool says of its servers.
func InstanceCondition(insts []*equinixv1.Instance, condType string, status metav1.ConditionStatus, reasons ...string) *metav1.Condition {
	for _, i := range insts {
		if i.DeletionTimestamp != nil {
			continue
		}
		c := conditions.Get(i.Status.Conditions, condType)
		if c != nil && c.Status == status && (len(reasons) == 0 || slices.Contains(reasons, c.Reason)) {
			return c
		}
	}
	return nil
}

// PasswordKey is the key of the console password in an Instance's Secret.
const PasswordKey = "password"
