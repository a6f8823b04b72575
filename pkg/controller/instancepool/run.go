package instancepool

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/common"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// poolRun is one reconcile of one pool.
type poolRun struct {
	common.Status
	h         *Handler
	pool      *v1.InstancePool
	persisted v1.InstancePoolStatus
	insts     []*v1.Instance
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
	// projectChanged is set while the credentials Secret names another
	// project than the pool's servers were made in: no server is created.
	projectChanged bool
}

// SyncPool keeps the pool at count Instances and reports its status.
func (h *Handler) SyncPool(name string, pool *v1.InstancePool) (*v1.InstancePool, error) {
	if pool == nil {
		h.pace.forget(name)
		return nil, nil
	}
	if pool.DeletionTimestamp != nil {
		return pool, nil
	}
	r, err := h.newRun(pool)
	if err != nil {
		return pool, err
	}
	return r.finish(r.sync())
}

func (h *Handler) newRun(pool *v1.InstancePool) (*poolRun, error) {
	insts, err := h.instances.Cache().GetByIndex(indexByPool, pool.Name)
	if err != nil {
		return nil, fmt.Errorf("listing instances of pool %s: %w", pool.Name, err)
	}
	return &poolRun{Status: common.NewStatus(h.recorder), h: h, pool: pool.DeepCopy(), persisted: *pool.Status.DeepCopy(), insts: insts}, nil
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

// setCondition sets a condition of the pool (see common.Status).
func (r *poolRun) setCondition(condType string, status metav1.ConditionStatus, reason, message string) {
	r.SetCondition(r.pool, &r.pool.Status.Conditions, r.pool.Generation, condType, status, reason, message)
}

func (r *poolRun) finish(err error) (*v1.InstancePool, error) {
	r.pool.Status.ObservedGeneration = r.pool.Generation
	reconciling, stalled := harvester.PoolUIConditions(r.pool.Status)
	conditions.Store(&r.pool.Status.Conditions, r.pool.Generation, reconciling, stalled)
	if !equality.Semantic.DeepEqual(r.persisted, r.pool.Status) {
		now := time.Now()
		if wait := r.h.pace.hold(r.pool.Name, &r.persisted, &r.pool.Status, now); wait > 0 {
			// The next run counts again and writes what it finds then.
			r.Requeue(wait)
		} else {
			updated, uerr := r.h.pools.UpdateStatus(r.pool)
			if uerr != nil {
				return r.pool, fmt.Errorf("updating status of pool %s: %w", r.pool.Name, uerr)
			}
			r.h.pace.wrote(r.pool.Name, now)
			r.pool = updated
		}
	}
	if after := r.After(); after > 0 && err == nil {
		r.h.pools.EnqueueAfter(r.pool.Name, after)
	}
	return r.pool, err
}
