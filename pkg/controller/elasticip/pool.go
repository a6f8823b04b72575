package elasticip

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/reconcile"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// pendingRetry paces a block Equinix Metal holds for approval.
const pendingRetry = time.Minute

// poolRun is one reconcile of one ElasticIPPool (see reconcile.Pass).
type poolRun struct {
	*reconcile.Pass[*equinixv1.ElasticIPPool, equinixv1.ElasticIPPoolStatus]
	h   *Handler
	now time.Time
}

func (h *Handler) newPoolRun(pool *equinixv1.ElasticIPPool) *poolRun {
	return &poolRun{Pass: reconcile.NewPass(h.poolKind(), pool), h: h, now: h.now()}
}

// poolKind is how an ElasticIPPool's status is stored: every write carries
// the observed generation.
func (h *Handler) poolKind() reconcile.Kind[*equinixv1.ElasticIPPool, equinixv1.ElasticIPPoolStatus] {
	return reconcile.Kind[*equinixv1.ElasticIPPool, equinixv1.ElasticIPPoolStatus]{
		Name:         "elasticippool",
		Status:       func(p *equinixv1.ElasticIPPool) *equinixv1.ElasticIPPoolStatus { return &p.Status },
		Conditions:   func(p *equinixv1.ElasticIPPool) *[]metav1.Condition { return &p.Status.Conditions },
		UpdateStatus: func(p *equinixv1.ElasticIPPool) (*equinixv1.ElasticIPPool, error) { return h.pools.UpdateStatus(p) },
		EnqueueAfter: func(name string, after time.Duration) { h.pools.EnqueueAfter(name, after) },
		Recorder:     h.recorder,
		Prepare:      func(p *equinixv1.ElasticIPPool) { p.Status.ObservedGeneration = p.Generation },
	}
}

// blocked says the pool waits on cond, whose reason and message Ready
// takes (quietly: cond's own change made the Event).
func (r *poolRun) blocked(cond, phase string) {
	r.Obj.Status.Status = phase
	if c := conditions.Get(r.Obj.Status.Conditions, cond); c != nil && c.Status != metav1.ConditionTrue {
		conditions.False(&r.Obj.Status.Conditions, r.Obj.Generation, equinixv1.ElasticIPPoolReady, c.Reason, c.Message)
	}
}

// EnsurePool reserves the pool's block, tagged as the addon's, and offers
// it as a harvester-load-balancer IPPool of the same name. At rest a pass
// makes no Metal call until the resync interval has passed since the block
// was last read.
func (h *Handler) EnsurePool(_ string, pool *equinixv1.ElasticIPPool) (*equinixv1.ElasticIPPool, error) {
	if pool == nil || pool.DeletionTimestamp != nil {
		return pool, nil
	}
	if !slices.Contains(pool.Finalizers, equinixv1.FinalizerElasticIPPool) {
		// The remove handler stores it first: no block before it is there.
		return pool, nil
	}
	r := h.newPoolRun(pool)
	return r.Finish(r.ensure())
}

func (r *poolRun) ensure() error {
	st := &r.Obj.Status
	if st.Status == "" {
		st.Status = equinixv1.ElasticIPPoolPhasePending
	}
	if err := r.countServices(); err != nil {
		return err
	}
	if st.CIDR != "" && r.h.poolAtRest(r.Obj.Name, r.now, r.h.settings.Resync) {
		return r.offer()
	}
	c, err := r.client()
	if err != nil || c == nil {
		return err
	}
	res, err := r.block(c)
	if err != nil || res == nil {
		return err
	}
	prefix, _ := res.Prefix()
	st.CIDR = prefix.String()
	r.h.poolVerified(r.Obj.Name, r.now)
	r.SetCondition(equinixv1.ElasticIPPoolReserved, metav1.ConditionTrue, equinixv1.ReasonReserved,
		fmt.Sprintf("block %s (reservation %s, metro %s) is the pool's", st.CIDR, res.ID, res.Metro))
	return r.offer()
}

// client is the Metal client of the pool's credentials, or nil after
// reporting why there is none.
func (r *poolRun) client() (metal.Client, error) {
	ref := r.Obj.Spec.CredentialsSecret
	creds, err := r.h.credentials.For(ref)
	if cerr, ok := credentials.AsError(err); ok {
		r.SetCondition(equinixv1.ElasticIPPoolCredentialsReady, metav1.ConditionFalse, cerr.Reason, cerr.Message)
		r.blocked(equinixv1.ElasticIPPoolCredentialsReady, equinixv1.ElasticIPPoolPhaseError)
		r.Requeue(authRetry)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	st := &r.Obj.Status
	if st.ProjectID != "" && st.ProjectID != creds.ProjectID {
		r.SetCondition(equinixv1.ElasticIPPoolCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonProjectMismatch, fmt.Sprintf(
			"the pool's block is in project %s, but Secret %s now names project %s: put its credentials back",
			st.ProjectID, r.h.credentials.RefFor(ref), creds.ProjectID))
		r.blocked(equinixv1.ElasticIPPoolCredentialsReady, equinixv1.ElasticIPPoolPhaseError)
		r.Requeue(authRetry)
		return nil, nil
	}
	st.ProjectID = creds.ProjectID
	c, err := r.h.metal.Client(creds)
	if err != nil {
		return nil, fmt.Errorf("building the Metal client: %w", err)
	}
	if !conditions.IsTrue(st.Conditions, equinixv1.ElasticIPPoolCredentialsReady) {
		r.SetCondition(equinixv1.ElasticIPPoolCredentialsReady, metav1.ConditionTrue, equinixv1.ReasonCredentialsReady,
			fmt.Sprintf("Secret %s holds credentials of project %s", r.h.credentials.RefFor(ref), creds.ProjectID))
	}
	return c, nil
}

// block reads the pool's reservation, or requests it. A request is never
// sent twice: before one, the reservations tagged with the pool's UID are
// listed, so that a request whose answer was lost is found. A block that
// is gone (released by someone) is reported, not requested again: the
// Services' addresses went with it.
func (r *poolRun) block(c metal.Client) (*metal.IPReservation, error) {
	st := &r.Obj.Status
	if st.ReservationID != "" {
		res, err := c.GetIPReservation(r.h.ctx, st.ReservationID)
		if metal.IsNotFound(err) {
			r.SetCondition(equinixv1.ElasticIPPoolReserved, metav1.ConditionFalse, equinixv1.ReasonBlockGone, fmt.Sprintf(
				"reservation %s (%s) is gone from project %s, released outside the addon; delete this pool and make another",
				st.ReservationID, st.CIDR, st.ProjectID))
			r.blocked(equinixv1.ElasticIPPoolReserved, equinixv1.ElasticIPPoolPhaseError)
			return nil, nil
		}
		if err != nil {
			return nil, r.metalFailure("reading reservation "+st.ReservationID, err)
		}
		return r.granted(res), nil
	}
	found, err := r.h.poolBlock(c, r.Obj)
	if err != nil {
		return nil, r.metalFailure("listing the project's IP reservations", err)
	}
	if found != nil {
		st.ReservationID = found.ID
		return r.granted(found), nil
	}
	res, err := c.ReserveIPs(r.h.ctx, metal.ReserveIPsRequest{
		Type: metal.IPReservationPublicIPv4, Quantity: int(r.Obj.Spec.Quantity), Metro: r.Obj.Spec.Metro,
		Tags:            []string{equinixv1.ClusterTag(r.h.clusterID), equinixv1.ElasticIPPoolTag(string(r.Obj.UID))},
		Details:         "harvester-equinix-addon ElasticIPPool " + r.Obj.Name,
		WaitForApproval: true,
	})
	if err != nil {
		return nil, r.metalFailure(fmt.Sprintf("reserving %d public IPv4 addresses in metro %s", r.Obj.Spec.Quantity, r.Obj.Spec.Metro), err)
	}
	st.ReservationID = res.ID
	r.Eventf(equinixv1.ReasonBlockRequested, "requested %d public IPv4 addresses in metro %s: reservation %s",
		r.Obj.Spec.Quantity, r.Obj.Spec.Metro, res.ID)
	return r.granted(res), nil
}

// granted returns a created block; a pending one is looked at again, a
// denied one reported.
func (r *poolRun) granted(res *metal.IPReservation) *metal.IPReservation {
	switch res.State {
	case metal.IPReservationPending:
		r.SetCondition(equinixv1.ElasticIPPoolReserved, metav1.ConditionFalse, equinixv1.ReasonBlockPending, fmt.Sprintf(
			"reservation %s waits for Equinix Metal's approval (blocks of more than four addresses may)", res.ID))
		r.blocked(equinixv1.ElasticIPPoolReserved, equinixv1.ElasticIPPoolPhaseWaiting)
		r.Requeue(pendingRetry)
		return nil
	case metal.IPReservationDenied:
		r.SetCondition(equinixv1.ElasticIPPoolReserved, metav1.ConditionFalse, equinixv1.ReasonBlockDenied, fmt.Sprintf(
			"Equinix Metal denied reservation %s; delete this pool, or ask Equinix for the block", res.ID))
		r.blocked(equinixv1.ElasticIPPoolReserved, equinixv1.ElasticIPPoolPhaseError)
		return nil
	}
	if _, ok := res.Prefix(); !ok {
		r.SetCondition(equinixv1.ElasticIPPoolReserved, metav1.ConditionFalse, equinixv1.ReasonBlockPending,
			fmt.Sprintf("reservation %s has no address yet", res.ID))
		r.blocked(equinixv1.ElasticIPPoolReserved, equinixv1.ElasticIPPoolPhaseWaiting)
		r.Requeue(pendingRetry)
		return nil
	}
	return res
}

// countServices counts the pool's ElasticIPs, from the cache.
func (r *poolRun) countServices() error {
	eips, err := r.h.poolElasticIPs(r.Obj.Name)
	if err != nil {
		return err
	}
	r.Obj.Status.Services = int32(len(eips)) //nolint:gosec // G115: bounded by the block, a few hundred addresses at most
	return nil
}

// metalFailure turns a failed call into an action, as an ElasticIP's does.
func (r *poolRun) metalFailure(step string, err error) error {
	if wait, ok := failure.SlowDown(err, busyRetry); ok {
		r.Requeue(wait)
		return nil
	}
	switch failure.ClassOf(err) {
	case failure.Unauthorized, failure.Forbidden:
		r.SetCondition(equinixv1.ElasticIPPoolCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonCredentialsInvalid, fmt.Sprintf(
			"Equinix Metal refused the credentials of Secret %s while %s: %s",
			r.h.credentials.RefFor(r.Obj.Spec.CredentialsSecret), step, failure.Message(err)))
		r.blocked(equinixv1.ElasticIPPoolCredentialsReady, equinixv1.ElasticIPPoolPhaseError)
		r.Requeue(authRetry)
		return nil
	case failure.Invalid, failure.NoCapacity:
		r.SetCondition(equinixv1.ElasticIPPoolReserved, metav1.ConditionFalse, equinixv1.ReasonInvalidRequest,
			fmt.Sprintf("Equinix Metal rejected %s: %s", step, failure.Message(err)))
		r.blocked(equinixv1.ElasticIPPoolReserved, equinixv1.ElasticIPPoolPhaseError)
		r.Requeue(refusedRetry)
		return nil
	}
	return fmt.Errorf("elasticippool %s: %s: %w", r.Obj.Name, step, err)
}
