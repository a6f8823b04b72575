package ownedserver

import (
	"fmt"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	toolscache "k8s.io/client-go/tools/cache"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
)

// A server people own is an Inventory in harvester-system. An Instance
// claims one with an optimistic update of the Inventory's metadata (label
// LabelClaimedBy naming the Instance, annotation AnnotationClaimUID with its
// UID) before anything is asked of its BMC: the apiserver lets only one of
// two concurrent claims through (the other gets a conflict and picks
// again), and an Instance whose status write was lost after the claim finds
// its server again by the label and UID instead of claiming a second one.

// Claimed reports whether any Instance holds the Inventory.
func Claimed(inv *seederv1alpha1.Inventory) bool {
	return inv.Labels[equinixv1.LabelClaimedBy] != "" || inv.Annotations[equinixv1.AnnotationClaimUID] != ""
}

// claimedServer returns the Inventory the Instance holds: the one its
// status names, else one whose claim's answer was lost (read back from the
// apiserver), else one its claim is found on (a claim whose status write
// was lost). nil when it holds none.
func (r *run) claimedServer() (*seederv1alpha1.Inventory, error) {
	cache := r.p.inventories.Cache()
	name := r.Obj.Status.Server
	if name == "" {
		if inv, err := r.settleClaim(); err != nil || inv != nil {
			return inv, err
		}
		// A claim this process made whose status write failed, which the
		// cache may not show yet.
		name = r.p.owned.claimOf(r.Obj.UID)
	}
	if name != "" {
		inv, err := cache.Get(seederv1alpha1.InventoryNamespace, name)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading Inventory %s: %w", name, err)
		}
		if inv = r.p.owned.written.Latest(inv); !common.ClaimedBy(inv, r.Obj) {
			return nil, nil
		}
		return inv, nil
	}
	held, err := cache.List(seederv1alpha1.InventoryNamespace, labels.SelectorFromSet(labels.Set{equinixv1.LabelClaimedBy: r.Obj.Name}))
	if err != nil {
		return nil, fmt.Errorf("listing Inventories claimed by %s: %w", r.Obj.Name, err)
	}
	for _, inv := range held {
		if common.ClaimedBy(inv, r.Obj) {
			return inv, nil
		}
	}
	return nil, nil
}

// candidates are the free servers the Instance's selector chooses, in the
// order they are tried: by name, so that the choice is the same after a
// restart. unnamable counts the servers that would be free but whose name
// cannot be a host name, for the message that none is free.
func (r *run) candidates() (free []*seederv1alpha1.Inventory, unnamable int, quarantined []string, err error) {
	sel, err := metav1.LabelSelectorAsSelector(&r.Obj.Spec.Servers.Selector)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("spec.servers.selector: %w", err)
	}
	invs, err := r.p.inventories.Cache().List(seederv1alpha1.InventoryNamespace, sel)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("listing Inventories: %w", err)
	}
	for _, inv := range invs {
		// This process's own claims and releases count before the cache
		// shows them: many Instances claim at once when a pool grows, and
		// a server another worker just claimed would only be refused.
		inv = r.p.owned.written.Latest(inv)
		switch {
		case !unclaimed(inv, r.p.nodes):
		case Quarantined(inv):
			quarantined = append(quarantined, inv.Name)
		case HostName(inv.Name):
			free = append(free, inv)
		default:
			unnamable++
		}
	}
	// A server that failed before is tried after those that did not, so
	// that a replacement does not take the server that just failed.
	sort.Slice(free, func(a, b int) bool {
		if fa, fb := failedInstalls(free[a]), failedInstalls(free[b]); fa != fb {
			return fa < fb
		}
		return free[a].Name < free[b].Name
	})
	sort.Strings(quarantined)
	return free, unnamable, quarantined, nil
}

// nodeGetter is the part of the Node cache FreeServer reads.
type nodeGetter interface {
	Get(name string) (*corev1.Node, error)
}

// FreeServer reports whether a server may be claimed: available (see
// available), and named so that its name can be the host name its node
// joins under (Harvester pairs a node with its Inventory by name).
func FreeServer(inv *seederv1alpha1.Inventory, nodes nodeGetter) bool {
	return HostName(inv.Name) && available(inv, nodes)
}

// HostName reports whether name can be a server's host name, and so its
// node's name: a DNS-1123 label (lower case, at most 63 characters, no dot).
func HostName(name string) bool {
	return len(validation.IsDNS1123Label(name)) == 0
}

// available reports whether a server is free to take whatever its name:
// not quarantined, not claimed, not being deleted, no node of its name (a node of the
// cluster runs on it), a management MAC (else the boot endpoint cannot know
// it), and its BMC reached and logged in to by the Inventories' chain.
func available(inv *seederv1alpha1.Inventory, nodes nodeGetter) bool {
	return !Quarantined(inv) && unclaimed(inv, nodes)
}

// unclaimed is available but for a quarantine.
func unclaimed(inv *seederv1alpha1.Inventory, nodes nodeGetter) bool {
	if inv.DeletionTimestamp != nil || Claimed(inv) || inv.Status.Status != seederv1alpha1.InventoryNodeReady ||
		inv.Spec.ManagementInterfaceMacAddress == "" {
		return false
	}
	_, err := nodes.Get(inv.Name)
	return apierrors.IsNotFound(err)
}

// FreeServers counts the free servers a template's selector chooses.
func FreeServers(invs interface {
	List(namespace string, selector labels.Selector) ([]*seederv1alpha1.Inventory, error)
}, nodes nodeGetter, t *equinixv1.InstanceTemplate) (int, error) {
	sel, err := metav1.LabelSelectorAsSelector(&t.Servers.Selector)
	if err != nil {
		return 0, fmt.Errorf("spec.servers.selector: %w", err)
	}
	list, err := invs.List(seederv1alpha1.InventoryNamespace, sel)
	if err != nil {
		return 0, fmt.Errorf("listing Inventories: %w", err)
	}
	n := 0
	for _, inv := range list {
		if FreeServer(inv, nodes) {
			n++
		}
	}
	return n, nil
}

// claim takes the first free server that the apiserver lets this Instance
// have. A conflict means another writer came first: the next candidate is
// tried. It returns nil when none is free.
func (r *run) claim() (*seederv1alpha1.Inventory, int, []string, error) {
	free, unnamable, quarantined, err := r.candidates()
	if err != nil {
		return nil, 0, nil, err
	}
	for _, inv := range free {
		if !r.p.owned.claiming.take(inv.Name) {
			continue
		}
		updated, err := r.p.inventories.Update(claimOn(inv, r.Obj))
		if err == nil {
			r.p.owned.claimed(r.Obj.UID, updated)
		}
		r.p.owned.claiming.done(inv.Name)
		switch {
		case err == nil:
			return updated, unnamable, quarantined, nil
		case apierrors.IsConflict(err), apierrors.IsNotFound(err):
			continue
		default:
			// The apiserver may have stored the claim before its answer was
			// lost (a restart cut the connection, the wait timed out). The
			// cache may not show it for a while after a restart, and this
			// server would look free, its Update a conflict, and the next
			// one claimed too: the first stays claimed by this Instance
			// after it is gone. The next pass settles it first.
			r.p.owned.unsure(r.Obj.UID, inv.Name)
			return nil, 0, nil, fmt.Errorf("claiming Inventory %s: %w", inv.Name, err)
		}
	}
	return nil, unnamable, quarantined, nil
}

// claimOn is a copy of the Inventory carrying the Instance's claim.
func claimOn(inv *seederv1alpha1.Inventory, inst *equinixv1.Instance) *seederv1alpha1.Inventory {
	claimed := inv.DeepCopy()
	if claimed.Labels == nil {
		claimed.Labels = map[string]string{}
	}
	if claimed.Annotations == nil {
		claimed.Annotations = map[string]string{}
	}
	claimed.Labels[equinixv1.LabelClaimedBy] = inst.Name
	claimed.Annotations[equinixv1.AnnotationClaimUID] = string(inst.UID)
	return claimed
}

// settleClaim reads, from the apiserver, the Inventory of a claim whose
// answer was lost, before anything else is claimed or released: it
// returns the Inventory when the claim is this Instance's, nil when the
// server went to another or is no longer free.
func (r *run) settleClaim() (*seederv1alpha1.Inventory, error) {
	name := r.p.owned.unsureOf(r.Obj.UID)
	if name == "" {
		return nil, nil
	}
	inv, err := r.p.inventories.Get(seederv1alpha1.InventoryNamespace, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		r.p.owned.settled(r.Obj.UID)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading Inventory %s, whose claim's answer was lost: %w", name, err)
	case common.ClaimedBy(inv, r.Obj):
		r.p.owned.claimed(r.Obj.UID, inv)
		return inv, nil
	case !available(inv, r.p.nodes):
		r.p.owned.settled(r.Obj.UID)
		return nil, nil
	}
	// Free on the apiserver, yet the lost write may still be on its way
	// there (a client-side timeout). Claiming it again on this copy's
	// resourceVersion settles it either way: this write wins and the late
	// one conflicts, or the late one landed first and this one conflicts,
	// to be read again on the next pass.
	claimed, err := r.p.inventories.Update(claimOn(inv, r.Obj))
	switch {
	case err == nil:
		r.p.owned.claimed(r.Obj.UID, claimed)
		return claimed, nil
	case apierrors.IsNotFound(err):
		r.p.owned.settled(r.Obj.UID)
		return nil, nil
	default:
		return nil, fmt.Errorf("claiming Inventory %s again, whose claim's answer was lost: %w", name, err)
	}
}

// unclaim frees the server: the claim goes, and with it the node binding
// the UI's annotation may have made to this Instance's node (under either
// name a server of this Instance may have joined as). Only this Instance's
// own claim is removed.
func (r *run) unclaim(inv *seederv1alpha1.Inventory) error {
	if !common.ClaimedBy(inv, r.Obj) {
		return nil
	}
	freed := inv.DeepCopy()
	pool, _ := r.p.pools.Get(r.Obj.Spec.PoolName)
	quarantine := ""
	if why := installFailed(r.Obj, pool, r.Now()); why != "" {
		quarantine = countFailure(freed, why, quarantineAfter(pool))
	}
	delete(freed.Labels, equinixv1.LabelClaimedBy)
	delete(freed.Annotations, equinixv1.AnnotationClaimUID)
	if named := freed.Annotations[seederv1alpha1.AnnotationLocalNodeName]; named == r.Obj.Name || named == r.Obj.NodeName() {
		delete(freed.Annotations, seederv1alpha1.AnnotationLocalNodeName)
	}
	updated, err := r.p.inventories.Update(freed)
	if err != nil && !apierrors.IsNotFound(err) {
		// A conflict brings the Instance back with the newer Inventory.
		return fmt.Errorf("releasing Inventory %s: %w", inv.Name, err)
	}
	r.p.owned.released(r.Obj.UID, updated)
	if quarantine != "" && err == nil {
		r.Eventf(equinixv1.ReasonServerQuarantined, "%s", quarantine)
		r.p.recorder.Event(updated, corev1.EventTypeWarning, equinixv1.ReasonServerQuarantined, quarantine)
	}
	r.Eventf(equinixv1.ReasonServerReleased, "released server %s (Inventory %s/%s): it is free again", inv.Name, inv.Namespace, inv.Name)
	return nil
}

// ownedState is what the provider keeps in the process:
// its own writes of Inventories, and each Instance's claim until its status
// names the server.
type ownedState struct {
	written *common.Writes[*seederv1alpha1.Inventory]
	mu      sync.Mutex
	claims  map[types.UID]string
	// unsureClaims are claims whose answer was lost, until read back.
	unsureClaims map[types.UID]string
	claiming     claiming
}

func newOwnedState(store toolscache.Store) *ownedState {
	return &ownedState{written: common.NewWrites[*seederv1alpha1.Inventory](store), claims: map[types.UID]string{},
		unsureClaims: map[types.UID]string{}, claiming: claiming{names: map[string]bool{}}}
}

func (o *ownedState) unsure(uid types.UID, name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.unsureClaims[uid] = name
}

func (o *ownedState) unsureOf(uid types.UID) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.unsureClaims[uid]
}

func (o *ownedState) settled(uid types.UID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.unsureClaims, uid)
}

func (o *ownedState) claimOf(uid types.UID) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.claims[uid]
}

func (o *ownedState) claimed(uid types.UID, inv *seederv1alpha1.Inventory) {
	o.written.Wrote(inv)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.claims[uid] = inv.Name
	delete(o.unsureClaims, uid)
}

func (o *ownedState) released(uid types.UID, inv *seederv1alpha1.Inventory) {
	if inv != nil {
		o.written.Wrote(inv)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.claims, uid)
	delete(o.unsureClaims, uid)
}
