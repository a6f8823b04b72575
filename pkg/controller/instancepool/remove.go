package instancepool

import (
	"fmt"

	"github.com/rancher/wrangler/v3/pkg/generic"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// RemovePool deletes every Instance of the pool and keeps the pool until they
// are all gone, so that `kubectl delete instancepool` returns only when the
// servers are released.
func (h *Handler) RemovePool(_ string, pool *equinixv1.InstancePool) (*equinixv1.InstancePool, error) {
	r, err := h.newRun(pool)
	if err != nil {
		return pool, err
	}
	r.Obj.Status.Status = equinixv1.PoolPhaseDeleting
	live, err := r.liveInstances()
	if err != nil {
		return pool, err
	}
	for _, inst := range active(live) {
		if err := r.deleteInstance(inst, equinixv1.ReasonScalingDown, fmt.Sprintf("pool deleted: deleting instance %s", inst.Name)); err != nil {
			return pool, err
		}
	}
	if len(live) == 0 {
		forgetPool(pool.Name)
	} else {
		recordPool(pool.Name, equinixv1.PoolPhaseDeleting, live)
	}
	if len(live) > 0 {
		r.SetCondition(equinixv1.PoolScalingDown, metav1.ConditionTrue, equinixv1.ReasonPoolDeleted,
			fmt.Sprintf("waiting for %d instance(s) to release their servers", len(live)))
		r.Requeue(h.settings.PollInterval)
		updated, err := r.Finish(nil)
		if err != nil {
			return updated, err
		}
		return updated, generic.ErrSkip
	}
	return pool, nil
}

// liveInstances lists the pool's Instances from the API server rather than
// the cache: creating or waiting on a stale view could double a pool.
func (r *poolRun) liveInstances() ([]*equinixv1.Instance, error) {
	list, err := r.h.instances.List(metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{equinixv1.LabelPool: r.Obj.Name}).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("listing instances of pool %s: %w", r.Obj.Name, err)
	}
	out := make([]*equinixv1.Instance, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].Spec.PoolName == r.Obj.Name {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}
