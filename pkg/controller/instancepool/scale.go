package instancepool

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
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
	return r.createInstances(active(live), r.toCreate(live))
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

// createInstances creates the n Instances the pool lacks beside cur (read
// from the API server) in one pass, in batches whose creates run at once:
// a pool grown by 20 has its 20 servers on their way together rather than
// one API round trip after another. Each batch that all went through
// doubles the next, from one (a ReplicaSet's slow start): a create refused
// for every Instance (a webhook down, a quota, a bad template) is sent
// once, not n times. Creating is stopped at the first batch with a
// refusal; the next pass counts again on the API server's list.
func (r *poolRun) createInstances(cur []*equinixv1.Instance, n int) error {
	if n <= 0 {
		return nil
	}
	planned := make([]*equinixv1.Instance, 0, n)
	for range n {
		// Reservations are picked one after the other, each seeing the
		// ones picked before it, so that no two take the same.
		planned = append(planned, r.newInstance(slices.Concat(cur, planned)))
	}
	want := len(cur) + n
	for _, batch := range slowStart(n) {
		created, errs := make([]*equinixv1.Instance, len(batch)), make([]error, len(batch))
		var wg sync.WaitGroup
		for i, at := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				created[i], errs[i] = r.createInstance(planned[at])
			}()
		}
		wg.Wait()
		for i, inst := range created {
			if inst == nil {
				continue
			}
			r.insts = append(r.insts, inst)
			r.Eventf(equinixv1.ReasonScalingUp, "created instance %s (%d of %d)", inst.Name, len(cur)+batch[i]+1, want)
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}

// slowStart splits n creates into batches of positions: 1, 2, 4, ... and
// the rest.
func slowStart(n int) [][]int {
	var out [][]int
	for next, size := 0, 1; next < n; size *= 2 {
		batch := make([]int, 0, min(size, n-next))
		for ; len(batch) < cap(batch); next++ {
			batch = append(batch, next)
		}
		out = append(out, batch)
	}
	return out
}

// newInstance is a new Instance of the pool, as createInstance sends it
// but for its name; existing are the pool's Instances, those planned with
// it included.
func (r *poolRun) newInstance(existing []*equinixv1.Instance) *equinixv1.Instance {
	controller, block := true, true
	return &equinixv1.Instance{
		ObjectMeta: metav1.ObjectMeta{
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
}

// createInstance creates inst under a new random name, another one should
// the name be taken. It only reads the pass, so that a batch's creates run
// at once.
func (r *poolRun) createInstance(inst *equinixv1.Instance) (*equinixv1.Instance, error) {
	for attempt := 0; attempt < 3; attempt++ {
		name, err := instanceName(r.Obj.Name)
		if err != nil {
			return nil, err
		}
		named := inst.DeepCopy()
		named.Name = name
		created, err := r.h.instances.Create(named)
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("creating an instance for pool %s: %w", r.Obj.Name, err)
		}
		return created, nil
	}
	return nil, fmt.Errorf("no free instance name for pool %s after 3 tries", r.Obj.Name)
}
