package instancepool

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// scale creates or removes Instances to match count (count+1 during a rollout).
func (r *poolRun) scale(now time.Time) error {
	count := int(r.pool.Spec.Count)
	cur := active(r.insts)
	outdated, _ := splitByTemplate(cur, templateHash(&r.pool.Spec.InstanceTemplate))
	want := targetSize(count, r.rolling, len(outdated))
	switch {
	case len(cur) < want:
		return r.scaleUp(now, cur, want)
	case len(cur) > want:
		return r.scaleDown(cur, len(cur)-want)
	}
	return nil
}

// targetSize is how many servers the pool keeps now: count, and during a
// rollout one more, the slot where a server of the new template comes up
// before an old one goes. Old servers beyond count go first: left in place
// (count lowered mid-rollout, say) they would fill that slot, no new server
// would be created, and the rollout, which waits for one, would never end.
func targetSize(count int, rolling bool, outdated int) int {
	if !rolling || outdated > count {
		return count
	}
	return count + 1
}

func (r *poolRun) scaleUp(now time.Time, cur []*v1.Instance, want int) error {
	st := r.pool.Status
	if st.FailedGeneration != 0 || r.projectChanged {
		return nil
	}
	if r.rolling && len(cur) >= int(r.pool.Spec.Count) {
		// One new server at a time during a rollout.
		_, current := splitByTemplate(cur, templateHash(&r.pool.Spec.InstanceTemplate))
		if !allManaged(current) {
			return nil
		}
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
	cur = active(live)
	if r.rolling {
		want = min(want, len(cur)+1)
	}
	for n := len(cur); n < want; n++ {
		if err := r.createInstance(cur, n+1, want); err != nil {
			return err
		}
		cur = active(r.insts)
	}
	return nil
}

// scaleDown removes n servers: older templates first, then in scaleDownOrder,
// skipping management nodes whose removal would break the etcd quorum.
func (r *poolRun) scaleDown(cur []*v1.Instance, n int) error {
	nodes, err := r.h.nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	byName := map[string]*corev1.Node{}
	for _, nd := range nodes {
		byName[nd.Name] = nd
	}
	outdated, current := splitByTemplate(cur, templateHash(&r.pool.Spec.InstanceTemplate))
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
		if err := r.deleteInstance(v, v1.ReasonScalingDown,
			fmt.Sprintf("scaling down to %d: deleting instance %s (%s)", r.pool.Spec.Count, v.Name, describeVictim(v))); err != nil {
			return err
		}
		n--
	}
	if n > 0 {
		r.scaleDownHeld = fmt.Sprintf("cannot remove %d more server(s): the rest are management nodes the etcd quorum needs: %s", n, strings.Join(held, "; "))
	}
	return nil
}

func describeVictim(inst *v1.Instance) string {
	switch scaleDownRank(inst) {
	case 0:
		return "marked with " + v1.AnnotationDelete
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
				Finalizers:  []string{v1.FinalizerInstance},
				Labels:      map[string]string{v1.LabelPool: r.pool.Name},
				Annotations: map[string]string{v1.AnnotationTemplateHash: templateHash(&r.pool.Spec.InstanceTemplate)},
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
		created, err := r.h.instances.Create(inst)
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("creating an instance for pool %s: %w", r.pool.Name, err)
		}
		r.insts = append(r.insts, created)
		r.Eventf(r.pool, v1.ReasonScalingUp, "created instance %s (%d of %d)", created.Name, n, want)
		return nil
	}
	return fmt.Errorf("no free instance name for pool %s after 3 tries", r.pool.Name)
}
