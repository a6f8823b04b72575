package elasticip

import (
	"fmt"
	"slices"
	"time"

	"github.com/rancher/wrangler/v3/pkg/generic"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// releaseWait paces the look at a pool whose ElasticIPs are still being
// released; their deletion brings it back sooner.
const releaseWait = 5 * time.Second

// ReleasePool runs when an ElasticIPPool is deleted: its ElasticIPs go
// first (each unassigns its address), then its IPPool, then the block. A
// block is released only while it carries the pool's tag and no
// assignment: an address someone else assigned from it is never taken away.
// Until all of that is done the finalizer stays.
func (h *Handler) ReleasePool(_ string, pool *equinixv1.ElasticIPPool) (*equinixv1.ElasticIPPool, error) {
	if pool == nil {
		return pool, nil
	}
	h.poolForget(pool.Name)
	eips, err := h.poolElasticIPs(pool.Name)
	if err != nil {
		return pool, err
	}
	for _, e := range eips {
		if e.DeletionTimestamp != nil {
			continue
		}
		if err := h.eips.Delete(e.Name, &metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return pool, fmt.Errorf("elasticippool %s: deleting ElasticIP %s: %w", pool.Name, e.Name, err)
		}
	}
	if len(eips) > 0 {
		h.pools.EnqueueAfter(pool.Name, releaseWait)
		return pool, generic.ErrSkip
	}
	if err := h.deleteIPPool(pool); err != nil {
		return pool, err
	}
	if done, err := h.releaseBlock(pool); err != nil || !done {
		if err == nil {
			err = generic.ErrSkip
		}
		return pool, err
	}
	return pool, nil
}

// deleteIPPool deletes the pool's IPPool, if it is the addon's.
func (h *Handler) deleteIPPool(pool *equinixv1.ElasticIPPool) error {
	existing, err := h.ipPools.Get(h.ctx, pool.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("elasticippool %s: reading IPPool %s: %w", pool.Name, pool.Name, err)
	}
	if existing.Labels[equinixv1.LabelElasticIPPool] != pool.Name {
		return nil
	}
	if err := h.ipPools.Delete(h.ctx, pool.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("elasticippool %s: deleting IPPool %s: %w", pool.Name, pool.Name, err)
	}
	return nil
}

// releaseBlock releases the pool's reservation; done is false while it
// must wait (an assignment someone else made is still on it).
func (h *Handler) releaseBlock(pool *equinixv1.ElasticIPPool) (bool, error) {
	creds, err := h.credentials.For(pool.Spec.CredentialsSecret)
	if err != nil {
		return false, fmt.Errorf("elasticippool %s: releasing its block needs the credentials: %w", pool.Name, err)
	}
	if p := pool.Status.ProjectID; p != "" && p != creds.ProjectID {
		return false, fmt.Errorf("elasticippool %s: Secret %s names project %s, but the block is in project %s: put its credentials back to release it",
			pool.Name, h.credentials.RefFor(pool.Spec.CredentialsSecret), creds.ProjectID, p)
	}
	c, err := h.metal.Client(creds)
	if err != nil {
		return false, fmt.Errorf("building the Metal client: %w", err)
	}
	var res *metal.IPReservation
	if id := pool.Status.ReservationID; id != "" {
		res, err = c.GetIPReservation(h.ctx, id)
		if metal.IsNotFound(err) {
			return true, nil
		}
	} else {
		// A request whose answer was lost before the status stored it.
		res, err = h.poolBlock(c, pool)
	}
	if err != nil {
		return false, fmt.Errorf("elasticippool %s: reading its block: %w", pool.Name, err)
	}
	if res == nil || !slices.Contains(res.Tags, equinixv1.ElasticIPPoolTag(string(pool.UID))) {
		return true, nil
	}
	if len(res.Assignments) > 0 {
		common.Eventf(h.recorder, pool, equinixv1.ReasonBlockInUse,
			"block %s (reservation %s) is not released: %s is assigned to device %s by someone else; unassign it and the block goes",
			pool.Status.CIDR, res.ID, res.Assignments[0].Address, res.Assignments[0].DeviceID)
		h.pools.EnqueueAfter(pool.Name, refusedRetry)
		return false, nil
	}
	if err := c.ReleaseIPReservation(h.ctx, res.ID); err != nil && !metal.IsNotFound(err) {
		return false, fmt.Errorf("elasticippool %s: releasing reservation %s: %w", pool.Name, res.ID, err)
	}
	common.Eventf(h.recorder, pool, equinixv1.ReasonBlockReleased, "released block %s (reservation %s) of project %s", pool.Status.CIDR, res.ID, creds.ProjectID)
	return true, nil
}
