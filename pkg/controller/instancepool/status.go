package instancepool

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/common"
)

// scale creates or removes Instances to match count.
func (r *poolRun) scale() error {
	want := int(r.pool.Spec.Count)
	cur := active(r.insts)
	switch {
	case len(cur) < want:
		if r.pool.Status.FailedGeneration != 0 {
			return nil
		}
		// The cache can lag behind Instances created a moment ago; the API
		// server cannot. Creating on a stale view would double the pool.
		live, err := r.liveInstances()
		if err != nil {
			return err
		}
		cur = active(live)
		for n := len(cur); n < want; n++ {
			if err := r.createInstance(cur, n+1, want); err != nil {
				return err
			}
			cur = active(r.insts)
		}
	case len(cur) > want:
		victims := ScaleDownOrder(cur)[:len(cur)-want]
		for _, v := range victims {
			if err := r.deleteInstance(v, common.ReasonScalingDown,
				fmt.Sprintf("scaling down to %d: deleting instance %s (%s)", want, v.Name, describeVictim(v))); err != nil {
				return err
			}
		}
	}
	return nil
}

func describeVictim(inst *v1.Instance) string {
	switch scaleDownRank(inst) {
	case 0:
		return "marked with " + common.AnnotationDelete
	case 1:
		return "never joined"
	case 2:
		return "unhealthy"
	default:
		return "newest"
	}
}

func (r *poolRun) createInstance(existing []*v1.Instance, n, want int) error {
	controller, block := true, true
	for attempt := 0; attempt < 3; attempt++ {
		name, err := instanceName(r.pool.Name)
		if err != nil {
			return err
		}
		inst := &v1.Instance{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Labels:      map[string]string{common.LabelPool: r.pool.Name},
				Annotations: map[string]string{common.AnnotationTemplateHash: TemplateHash(&r.pool.Spec.InstanceTemplate)},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: v1.SchemeGroupVersion.String(), Kind: "InstancePool", Name: r.pool.Name, UID: r.pool.UID,
					Controller: &controller, BlockOwnerDeletion: &block,
				}},
			},
			Spec: v1.InstanceSpec{
				PoolName:              r.pool.Name,
				HardwareReservationID: pickReservation(r.pool, existing),
				InstanceTemplate:      *r.pool.Spec.InstanceTemplate.DeepCopy(),
			},
		}
		created, err := r.h.deps.Instances.Create(inst)
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("creating an instance for pool %s: %w", r.pool.Name, err)
		}
		r.insts = append(r.insts, created)
		r.h.deps.Recorder.Eventf(r.pool, "Normal", common.ReasonScalingUp, "created instance %s (%d of %d)", created.Name, n, want)
		return nil
	}
	return fmt.Errorf("no free instance name for pool %s after 3 tries", r.pool.Name)
}

// summarize fills ready/requested, the phase word and the scaling and Ready
// conditions from the Instances.
func (r *poolRun) summarize() {
	st := &r.pool.Status
	want := int(r.pool.Spec.Count)
	cur := active(r.insts)
	var ready, provisioning, unhealthy, deleting int
	for _, i := range r.insts {
		switch {
		case i.DeletionTimestamp != nil:
			deleting++
		case i.Status.Status == v1.PhaseManaged:
			ready++
		case i.Status.Status == v1.PhaseUnhealthy:
			unhealthy++
		case i.Status.JoinedAt == nil:
			provisioning++
		}
	}
	st.Requested, st.Ready = int32(want), int32(ready)

	if provisioning > 0 || len(cur) < want {
		r.setCondition(v1.PoolScalingUp, metav1.ConditionTrue, common.ReasonScalingUp,
			fmt.Sprintf("%d of %d servers ready, %d provisioning", ready, want, provisioning), false)
	} else {
		r.setCondition(v1.PoolScalingUp, metav1.ConditionFalse, "Idle", "no servers are being added", false)
	}
	if deleting > 0 || len(cur) > want {
		r.setCondition(v1.PoolScalingDown, metav1.ConditionTrue, common.ReasonScalingDown,
			fmt.Sprintf("%d server(s) being removed", deleting+max(0, len(cur)-want)), false)
	} else {
		r.setCondition(v1.PoolScalingDown, metav1.ConditionFalse, "Idle", "no servers are being removed", false)
	}
	if ready == want && len(cur) == want {
		r.setCondition(v1.PoolReady, metav1.ConditionTrue, "AllReady", fmt.Sprintf("all %d servers are managed with a Ready node", want), false)
	} else {
		r.setCondition(v1.PoolReady, metav1.ConditionFalse, "NotAllReady",
			fmt.Sprintf("%d of %d servers are managed with a Ready node", ready, want), false)
	}

	switch {
	case st.FailedGeneration != 0:
		st.Status = v1.PoolPhaseFailed
	case ready == want && len(cur) == want && deleting == 0:
		st.Status = v1.PoolPhaseReady
	case ready == 0 && (conditions.IsFalse(st.Conditions, v1.PoolCredentialsReady) || conditions.IsFalse(st.Conditions, v1.PoolJoinInfoReady)):
		st.Status = v1.PoolPhasePending
	case len(cur) != want || deleting > 0:
		st.Status = v1.PoolPhaseScaling
	case unhealthy > 0:
		st.Status = v1.PoolPhaseDegraded
	default:
		st.Status = v1.PoolPhaseProvisioning
	}
}
