package instancepool

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/reconcile"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// poolRun is one reconcile of one pool (see reconcile.Pass): steps change
// r.Obj.Status, and Finish stores it once.
type poolRun struct {
	*reconcile.Pass[*equinixv1.InstancePool, equinixv1.InstancePoolStatus]
	h     *Handler
	insts []*equinixv1.Instance
	// rolling is set while servers of an older template remain.
	rolling bool
	// surge and unavailable are spec.rollout resolved against count.
	surge, unavailable int
	// rolloutCreate is how many new servers the rollout asks for now.
	rolloutCreate int
	// nodes is the Node cache's content, read once per run.
	nodes []*corev1.Node
	// backingOff is how long the next creation waits after failures.
	backingOff time.Duration
	// scaleDownHeld says why a scale-down could not remove enough servers.
	scaleDownHeld string
	// holdCreates is set while the provider says no server may be
	// created (a condition says why).
	holdCreates bool
}

// SyncPool keeps the pool at count Instances and reports its status.
func (h *Handler) SyncPool(name string, pool *equinixv1.InstancePool) (*equinixv1.InstancePool, error) {
	if pool == nil {
		h.statusPacing.forget(name)
		return nil, nil
	}
	if pool.DeletionTimestamp != nil {
		return pool, nil
	}
	r, err := h.newRun(pool)
	if err != nil {
		return pool, err
	}
	return r.Finish(r.sync())
}

func (h *Handler) newRun(pool *equinixv1.InstancePool) (*poolRun, error) {
	insts, err := h.instances.Cache().GetByIndex(indexByPool, pool.Name)
	if err != nil {
		return nil, fmt.Errorf("listing instances of pool %s: %w", pool.Name, err)
	}
	return &poolRun{Pass: reconcile.NewPass(h.kind(), pool), h: h, insts: insts}, nil
}

// kind is how a pool's status is stored. Every write carries the observed
// generation and the conditions the Harvester UI reads; a write that only
// reports progress waits for the spacing of the pool's writes (see
// statusPacing).
func (h *Handler) kind() reconcile.Kind[*equinixv1.InstancePool, equinixv1.InstancePoolStatus] {
	return reconcile.Kind[*equinixv1.InstancePool, equinixv1.InstancePoolStatus]{
		Name:         "pool",
		Status:       func(p *equinixv1.InstancePool) *equinixv1.InstancePoolStatus { return &p.Status },
		Conditions:   func(p *equinixv1.InstancePool) *[]metav1.Condition { return &p.Status.Conditions },
		UpdateStatus: func(p *equinixv1.InstancePool) (*equinixv1.InstancePool, error) { return h.pools.UpdateStatus(p) },
		EnqueueAfter: func(name string, after time.Duration) { h.pools.EnqueueAfter(name, after) },
		Recorder:     h.recorder,
		Prepare: func(p *equinixv1.InstancePool) {
			p.Status.ObservedGeneration = p.Generation
			reconciling, stalled := harvester.PoolUIConditions(p.Status)
			conditions.Store(&p.Status.Conditions, p.Generation, reconciling, stalled)
		},
		Hold: func(next *equinixv1.InstancePool, stored *equinixv1.InstancePoolStatus) time.Duration {
			return h.statusPacing.hold(next.Name, stored, &next.Status, time.Now())
		},
		Wrote: func(_ *equinixv1.InstancePoolStatus, written *equinixv1.InstancePool) {
			h.statusPacing.wrote(written.Name, time.Now())
		},
	}
}

func (r *poolRun) sync() error {
	now := time.Now()
	r.checkInputs()
	if err := r.replaceFailed(now); err != nil {
		return err
	}
	if err := r.replaceDroppedReservations(); err != nil {
		return err
	}
	if err := r.remediate(now); err != nil {
		return err
	}
	if err := r.rollout(); err != nil {
		return err
	}
	if err := r.scale(now); err != nil {
		return err
	}
	if err := r.syncInPlace(); err != nil {
		return err
	}
	r.summarize()
	return nil
}
