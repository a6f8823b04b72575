package elasticip

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	lbv1beta1 "github.com/harvester/harvester-equinix-addon/pkg/apis/loadbalancer.harvesterhci.io/v1beta1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// ipPoolSpec is the IPPool offering a block: every address of it (each is
// assigned alone, as a /32; the block is no subnet of any network), to the
// load balancers the pool's selector names.
func ipPoolSpec(pool *equinixv1.ElasticIPPool, block netip.Prefix) lbv1beta1.IPPoolSpec {
	last := block.Addr()
	for a := block.Addr(); block.Contains(a); a = a.Next() {
		last = a
	}
	spec := lbv1beta1.IPPoolSpec{
		Description: fmt.Sprintf("Equinix Metal Elastic IPs of ElasticIPPool %s (harvester-equinix-addon)", pool.Name),
		Ranges:      []lbv1beta1.Range{{Subnet: block.String(), RangeStart: block.Addr().String(), RangeEnd: last.String()}},
	}
	if s := pool.Spec.Selector; s != nil {
		spec.Selector = lbv1beta1.Selector{Priority: uint32(max(s.Priority, 0)), Network: s.Network} //nolint:gosec // G115: max(priority, 0) is never negative
		for _, t := range s.Scope {
			spec.Selector.Scope = append(spec.Selector.Scope, lbv1beta1.Tuple{Project: t.Project, Namespace: t.Namespace, GuestCluster: t.GuestCluster})
		}
	}
	return spec
}

// offer makes the IPPool of the block, or brings the addon's own back to
// what the pool says. An IPPool of that name the addon did not make is
// reported and left alone.
func (r *poolRun) offer() error {
	st := &r.Obj.Status
	block, err := netip.ParsePrefix(st.CIDR)
	if err != nil {
		return fmt.Errorf("elasticippool %s: block %q: %w", r.Obj.Name, st.CIDR, err)
	}
	want := ipPoolSpec(r.Obj, block)
	name := r.Obj.Name
	existing, err := r.h.ipPools.Get(r.h.ctx, name, metav1.GetOptions{})
	switch {
	case err != nil && isNoKind(err):
		return r.noIPPoolKind(err)
	case apierrors.IsNotFound(err):
		created, cerr := r.h.ipPools.Create(r.h.ctx, &lbv1beta1.IPPool{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{equinixv1.LabelElasticIPPool: r.Obj.Name}},
			Spec:       want,
		}, metav1.CreateOptions{})
		if isNoKind(cerr) {
			return r.noIPPoolKind(cerr)
		}
		if cerr != nil {
			return fmt.Errorf("elasticippool %s: creating IPPool %s: %w", r.Obj.Name, name, cerr)
		}
		existing = created
	case err != nil:
		return fmt.Errorf("elasticippool %s: reading IPPool %s: %w", r.Obj.Name, name, err)
	case existing.Labels[equinixv1.LabelElasticIPPool] != r.Obj.Name:
		r.SetCondition(equinixv1.ElasticIPPoolOffered, metav1.ConditionFalse, equinixv1.ReasonIPPoolTaken, fmt.Sprintf(
			"IPPool %s exists and is not this pool's (it lacks label %s=%s); the addon leaves it alone: rename the pool, or delete that IPPool",
			name, equinixv1.LabelElasticIPPool, r.Obj.Name))
		r.blocked(equinixv1.ElasticIPPoolOffered, equinixv1.ElasticIPPoolPhaseError)
		r.Requeue(refusedRetry)
		return nil
	case !equality.Semantic.DeepEqual(existing.Spec, want):
		fixed := existing.DeepCopy()
		fixed.Spec = want
		if existing, err = r.h.ipPools.Update(r.h.ctx, fixed, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("elasticippool %s: updating IPPool %s: %w", r.Obj.Name, name, err)
		}
	}
	st.IPPool = existing.Name
	r.SetCondition(equinixv1.ElasticIPPoolOffered, metav1.ConditionTrue, equinixv1.ReasonIPPoolOffered, fmt.Sprintf(
		"IPPool %s offers %s to harvester-load-balancer; each LoadBalancer Service given one of its addresses gets an ElasticIP that follows kube-vip", name, st.CIDR))
	r.SetCondition(equinixv1.ElasticIPPoolReady, metav1.ConditionTrue, equinixv1.ReasonReconciled, fmt.Sprintf("block %s is offered as IPPool %s", st.CIDR, name))
	st.Status = equinixv1.ElasticIPPoolPhaseReady
	r.Requeue(r.h.poolDue(r.Obj.Name, r.now, r.h.settings.Resync))
	return nil
}

// noIPPoolKind: harvester-load-balancer is not installed (no IPPool kind).
func (r *poolRun) noIPPoolKind(err error) error {
	r.SetCondition(equinixv1.ElasticIPPoolOffered, metav1.ConditionFalse, equinixv1.ReasonIPPoolMissing, fmt.Sprintf(
		"the cluster has no ippools.loadbalancer.harvesterhci.io (%v): harvester-load-balancer, part of Harvester, is missing", err))
	r.blocked(equinixv1.ElasticIPPoolOffered, equinixv1.ElasticIPPoolPhaseError)
	r.Requeue(refusedRetry)
	return nil
}

// isNoKind tells a 404 for the resource type (no CRD) from one for an
// object: only the latter names the object.
func isNoKind(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d == nil || d.Name == ""
}

// poolBlock finds the reservation tagged with the pool's UID; two is an
// error to surface, never resolved by picking one.
func (h *Handler) poolBlock(c metal.Client, pool *equinixv1.ElasticIPPool) (*metal.IPReservation, error) {
	list, err := c.ListIPReservations(h.ctx, metal.ListIPReservationsOptions{
		Tag: equinixv1.ElasticIPPoolTag(string(pool.UID)), Types: []string{metal.IPReservationPublicIPv4}})
	if err != nil {
		return nil, err
	}
	switch len(list) {
	case 0:
		return nil, nil
	case 1:
		return &list[0], nil
	}
	return nil, fmt.Errorf("%d reservations carry the tag of elasticippool %s (%s, %s, ...): release all but one", len(list), pool.Name, list[0].ID, list[1].ID)
}

// poolElasticIPs are the pool's ElasticIPs, from the cache.
func (h *Handler) poolElasticIPs(pool string) ([]*equinixv1.ElasticIP, error) {
	return h.eips.Cache().List(labels.SelectorFromSet(labels.Set{equinixv1.LabelElasticIPPool: pool}))
}

// A pool's block is read at most once per resync interval while it is
// granted; poolChecked is when each was last read.
func (h *Handler) poolAtRest(name string, now time.Time, resync time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	at, ok := h.poolChecked[name]
	return ok && now.Sub(at) < resync
}

func (h *Handler) poolVerified(name string, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.poolChecked[name] = now
}

func (h *Handler) poolForget(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.poolChecked, name)
}

// poolDue is how long until the block is read again.
func (h *Handler) poolDue(name string, now time.Time, resync time.Duration) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if at, ok := h.poolChecked[name]; ok {
		return resync - now.Sub(at)
	}
	return resync
}
