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
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// rollout replaces servers made from an older template, one at a time and
// new server first (surge 1): while any is left the pool keeps count+1
// servers, and an old one is removed only once every new one is managed.
func (r *poolRun) rollout() error {
	hash := TemplateHash(&r.pool.Spec.InstanceTemplate)
	cur := active(r.insts)
	outdated, current := splitByTemplate(cur, hash)
	r.rolling = len(outdated) > 0 && r.pool.Spec.Count > 0
	if !r.rolling {
		r.setCondition(v1.PoolRollingOut, metav1.ConditionFalse, v1.ReasonUpToDate, "every server runs the pool's current template")
		return nil
	}
	r.setCondition(v1.PoolRollingOut, metav1.ConditionTrue, v1.ReasonReplacingOutdated,
		fmt.Sprintf("%d of %d servers run an older template; replacing them one at a time, the new server first", len(outdated), len(cur)))
	if len(cur) <= int(r.pool.Spec.Count) || len(current) == 0 || !allManaged(current) {
		return nil
	}
	victim := ScaleDownOrder(outdated)[0]
	return r.deleteInstance(victim, v1.ReasonRollingOut, fmt.Sprintf("rolling out: instance %s runs an older template and its replacement is ready", victim.Name))
}

func splitByTemplate(insts []*v1.Instance, hash string) (outdated, current []*v1.Instance) {
	for _, i := range insts {
		if i.Annotations[v1.AnnotationTemplateHash] == hash {
			current = append(current, i)
		} else {
			outdated = append(outdated, i)
		}
	}
	return outdated, current
}

func allManaged(insts []*v1.Instance) bool {
	for _, i := range insts {
		if i.Status.Status != v1.PhaseManaged {
			return false
		}
	}
	return true
}

// scale creates or removes Instances to match count (count+1 during a rollout).
func (r *poolRun) scale(now time.Time) error {
	count := int(r.pool.Spec.Count)
	cur := active(r.insts)
	outdated, _ := splitByTemplate(cur, TemplateHash(&r.pool.Spec.InstanceTemplate))
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
		_, current := splitByTemplate(cur, TemplateHash(&r.pool.Spec.InstanceTemplate))
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

// scaleDown removes n servers: older templates first, then in ScaleDownOrder,
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
	outdated, current := splitByTemplate(cur, TemplateHash(&r.pool.Spec.InstanceTemplate))
	candidates := append(ScaleDownOrder(outdated), ScaleDownOrder(current)...)
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
				Labels:      map[string]string{v1.LabelPool: r.pool.Name},
				Annotations: map[string]string{v1.AnnotationTemplateHash: TemplateHash(&r.pool.Spec.InstanceTemplate)},
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
		case i.Status.JoinedAt == nil && i.Status.Status != v1.PhaseFailed:
			provisioning++
		}
	}
	st.Requested, st.Ready = int32(want), int32(ready)
	recordPhases(r.pool.Name, r.insts)

	switch {
	case r.backingOff > 0:
		r.setCondition(v1.PoolScalingUp, metav1.ConditionTrue, v1.ReasonBackingOff,
			fmt.Sprintf("%d server(s) in a row failed to join; the next is created in %s", st.ConsecutiveFailures, r.backingOff.Round(time.Second)))
	case st.FailedGeneration != 0:
		r.setCondition(v1.PoolScalingUp, metav1.ConditionFalse, v1.ReasonProvisioningFailed,
			"no servers are created until the pool spec changes (see ProvisioningFailed)")
	case provisioning > 0 || len(cur) < want:
		r.setCondition(v1.PoolScalingUp, metav1.ConditionTrue, v1.ReasonScalingUp,
			fmt.Sprintf("%d of %d servers ready, %d provisioning", ready, want, provisioning))
	default:
		r.setCondition(v1.PoolScalingUp, metav1.ConditionFalse, v1.ReasonIdle, "no servers are being added")
	}
	switch {
	case r.scaleDownHeld != "":
		r.setCondition(v1.PoolScalingDown, metav1.ConditionTrue, v1.ReasonQuorumGuard, r.scaleDownHeld)
	case deleting > 0 || len(cur) > want:
		r.setCondition(v1.PoolScalingDown, metav1.ConditionTrue, v1.ReasonScalingDown,
			fmt.Sprintf("%d server(s) being removed", deleting+max(0, len(cur)-want)))
	default:
		r.setCondition(v1.PoolScalingDown, metav1.ConditionFalse, v1.ReasonIdle, "no servers are being removed")
	}
	if ready == want && len(cur) == want {
		r.setCondition(v1.PoolReady, metav1.ConditionTrue, v1.ReasonAllReady, fmt.Sprintf("all %d servers are managed with a Ready node", want))
	} else {
		msg := fmt.Sprintf("%d of %d servers are managed with a Ready node", ready, want)
		if waits := serverWaits(r.insts); waits != "" {
			msg += "; " + waits
		}
		r.setCondition(v1.PoolReady, metav1.ConditionFalse, v1.ReasonNotAllReady, msg)
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

// recordPhases sets the instances-by-phase gauge of a pool (phases with no
// Instance read zero rather than disappearing, which keeps graphs continuous).
func recordPhases(pool string, insts []*v1.Instance) {
	counts := map[string]int{}
	for _, p := range []string{v1.PhasePending, v1.PhaseProvisioning, v1.PhaseNetworking, v1.PhaseInstalling,
		v1.PhaseJoining, v1.PhaseManaged, v1.PhaseUnhealthy, v1.PhaseFailed, v1.PhaseDeleting} {
		counts[p] = 0
	}
	for _, i := range insts {
		phase := i.Status.Status
		if i.DeletionTimestamp != nil {
			phase = v1.PhaseDeleting
		}
		if phase == "" {
			phase = v1.PhasePending
		}
		counts[phase]++
	}
	for phase, n := range counts {
		metrics.Instances.WithLabelValues(pool, phase).Set(float64(n))
	}
}
