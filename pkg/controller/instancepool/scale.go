package instancepool

import (
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// scale creates or removes Instances to match count. During a rollout it
// creates the new servers the rollout allows (see planRollout), and removes
// servers only beyond count + maxSurge (count lowered mid-rollout): old
// ones first.
func (r *poolRun) scale(now time.Time) error {
	cur := active(r.insts)
	switch {
	case r.excess(cur) > 0:
		// The cache can lag behind a removal made a moment ago: how many
		// more go is counted on the API server's list.
		live, err := r.liveInstances()
		if err != nil {
			return err
		}
		if cur := active(live); r.excess(cur) > 0 {
			return r.scaleDown(cur, r.excess(cur))
		}
	case r.rolling && r.rolloutCreate > 0, !r.rolling && len(cur) < int(r.Obj.Spec.Count):
		return r.scaleUp(now)
	}
	return nil
}

// excess is how many of the servers not being removed are too many: above
// count, or during a rollout above count + maxSurge.
func (r *poolRun) excess(cur []*equinixv1.Instance) int {
	ceiling := int(r.Obj.Spec.Count)
	if r.rolling {
		ceiling += r.surge
	}
	return len(cur) - ceiling
}

// surgeRoom is how many servers of the current template a rollout may add:
// up to count of them, while the pool holds fewer than count + maxSurge,
// servers being removed included.
func surgeRoom(count, surge, all, current int) int {
	return max(0, min(count+surge-all, count-current))
}

// toCreate is how many servers to add now, counted on a list read from the
// API server; whether the pool rolls out is read from that list too, since
// the cache can miss an old server created a moment before the template
// changed.
func (r *poolRun) toCreate(live []*equinixv1.Instance) int {
	count := int(r.Obj.Spec.Count)
	hash := templateHash(&r.Obj.Spec.InstanceTemplate)
	cur := active(live)
	outdated, current := splitByTemplate(cur, hash)
	oldLeaving, _ := splitByTemplate(deleting(live), hash)
	if len(outdated)+len(oldLeaving) == 0 {
		return count - len(cur)
	}
	return surgeRoom(count, r.surge, len(live), len(current))
}

func (r *poolRun) scaleUp(now time.Time) error {
	st := r.Obj.Status
	if st.FailedGeneration != 0 || r.holdCreates {
		return nil
	}
	if st.ConsecutiveFailures > 0 && st.LastProvisionFailure != nil {
		wait := st.LastProvisionFailure.Add(replacementBackoff(r.h.settings.ReplacementBackoff, st.ConsecutiveFailures)).Sub(now)
		if wait > 0 {
			r.backingOff = wait
			r.Requeue(wait)
			return nil
		}
	}
	// The cache can lag behind Instances created a moment ago; the API
	// server cannot. Creating on a stale view would double the pool.
	live, err := r.liveInstances()
	if err != nil {
		return err
	}
	cur := active(live)
	n := r.toCreate(live)
	for i := 0; i < n; i++ {
		if err := r.createInstance(cur, len(cur)+1, len(cur)+n-i); err != nil {
			return err
		}
		cur = append(cur, r.insts[len(r.insts)-1])
	}
	return nil
}

// scaleDown removes n servers: older templates first, then in scaleDownOrder,
// skipping management nodes whose removal would break the etcd quorum.
func (r *poolRun) scaleDown(cur []*equinixv1.Instance, n int) error {
	nodes, err := r.nodeList()
	if err != nil {
		return err
	}
	byName := nodesByName(nodes)
	outdated, current := splitByTemplate(cur, templateHash(&r.Obj.Spec.InstanceTemplate))
	candidates := append(scaleDownOrder(outdated), scaleDownOrder(current)...)
	var held []string
	for _, v := range candidates {
		if n == 0 {
			break
		}
		if node := byName[v.Status.NodeName]; node != nil && harvester.IsManagementNode(node) {
			if ok, why := harvester.RemovalKeepsQuorum(nodes, node); !ok {
				held = append(held, fmt.Sprintf("%s (%s)", v.Name, why))
				continue
			}
		}
		if err := r.deleteInstance(v, equinixv1.ReasonScalingDown,
			fmt.Sprintf("scaling down to %d: deleting instance %s (%s)", r.Obj.Spec.Count, v.Name, removalReason(v))); err != nil {
			return err
		}
		n--
	}
	if n > 0 {
		r.scaleDownHeld = fmt.Sprintf("cannot remove %d more server(s): the rest are management nodes the etcd quorum needs: %s", n, strings.Join(held, "; "))
	}
	return nil
}

// removalReason says why scale-down chose inst.
func removalReason(inst *equinixv1.Instance) string {
	switch scaleDownRank(inst) {
	case 0:
		return "marked with " + equinixv1.AnnotationDelete
	case 1:
		return "never joined"
	case 2:
		return "unhealthy"
	default:
		return "newest"
	}
}

func (r *poolRun) createInstance(existing []*equinixv1.Instance, n, want int) error {
	controller, block := true, true
	for attempt := 0; attempt < 3; attempt++ {
		name, err := instanceName(r.Obj.Name)
		if err != nil {
			return err
		}
		inst := &equinixv1.Instance{
			ObjectMeta: metav1.ObjectMeta{
				Name: name,
				// The provider's cleanup finalizer, so that no window is
				// left between the creation and its first call.
				Finalizers:  []string{r.h.provider.Names().InstanceFinalizer()},
				Labels:      map[string]string{equinixv1.LabelPool: r.Obj.Name},
				Annotations: map[string]string{equinixv1.AnnotationTemplateHash: templateHash(&r.Obj.Spec.InstanceTemplate)},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: equinixv1.SchemeGroupVersion.String(), Kind: "InstancePool", Name: r.Obj.Name, UID: r.Obj.UID,
					Controller: &controller, BlockOwnerDeletion: &block,
				}},
			},
			Spec: equinixv1.InstanceSpec{
				PoolName:              r.Obj.Name,
				HardwareReservationID: pickReservation(r.Obj, existing),
				InstanceTemplate:      *r.Obj.Spec.InstanceTemplate.DeepCopy(),
			},
		}
		created, err := r.h.instances.Create(inst)
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("creating an instance for pool %s: %w", r.Obj.Name, err)
		}
		r.insts = append(r.insts, created)
		r.Eventf(equinixv1.ReasonScalingUp, "created instance %s (%d of %d)", created.Name, n, want)
		return nil
	}
	return fmt.Errorf("no free instance name for pool %s after 3 tries", r.Obj.Name)
}
