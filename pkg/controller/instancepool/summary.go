package instancepool

import (
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
)

// summarize fills ready/requested, the rollout's counts (updated,
// available), the phase word and the scaling and Ready conditions from the
// Instances.
func (r *poolRun) summarize() {
	st := &r.Obj.Status
	want := int(r.Obj.Spec.Count)
	cur := active(r.insts)
	var ready, provisioning, unhealthy, deleting, off int
	for _, i := range r.insts {
		switch {
		case i.DeletionTimestamp != nil:
			deleting++
		case i.Status.Status == equinixv1.PhaseManaged:
			ready++
		case i.Status.Status == equinixv1.PhaseOff:
			// Switched off on request: as asked, so neither unhealthy
			// nor missing.
			off++
		case i.Status.Status == equinixv1.PhaseUnhealthy:
			unhealthy++
		case i.Status.JoinedAt == nil && i.Status.Status != equinixv1.PhaseFailed:
			provisioning++
		}
	}
	st.Requested, st.Ready, st.PoweredOff = int32(want), int32(ready), int32(off) //nolint:gosec // G115: counts of a pool's servers, at most spec.count (an int32)
	_, current := splitByTemplate(cur, templateHash(&r.Obj.Spec.InstanceTemplate))
	st.Updated, st.Available = int32(len(current)), int32(countAvailable(cur, availability(r.nodes))) //nolint:gosec // G115: as above
	defer func() { recordPool(r.Obj.Name, st.Status, r.insts) }()

	switch {
	case r.backingOff > 0:
		r.SetCondition(equinixv1.PoolScalingUp, metav1.ConditionTrue, equinixv1.ReasonBackingOff,
			fmt.Sprintf("%d server(s) in a row failed to join; the next is created in %s", st.ConsecutiveFailures, r.backingOff.Round(time.Second)))
	case st.FailedGeneration != 0:
		r.SetCondition(equinixv1.PoolScalingUp, metav1.ConditionFalse, equinixv1.ReasonProvisioningFailed,
			"no servers are created until the pool spec changes (see ProvisioningFailed)")
	case provisioning > 0 || len(cur) < want:
		r.SetCondition(equinixv1.PoolScalingUp, metav1.ConditionTrue, equinixv1.ReasonScalingUp,
			fmt.Sprintf("%d of %d servers ready, %d provisioning", ready, want, provisioning))
	default:
		r.SetCondition(equinixv1.PoolScalingUp, metav1.ConditionFalse, equinixv1.ReasonIdle, "no servers are being added")
	}
	switch {
	case r.scaleDownHeld != "":
		r.SetCondition(equinixv1.PoolScalingDown, metav1.ConditionTrue, equinixv1.ReasonQuorumGuard, r.scaleDownHeld)
	case deleting > 0 || len(cur) > want:
		r.SetCondition(equinixv1.PoolScalingDown, metav1.ConditionTrue, equinixv1.ReasonScalingDown,
			fmt.Sprintf("%d server(s) being removed", deleting+max(0, len(cur)-want)))
	default:
		r.SetCondition(equinixv1.PoolScalingDown, metav1.ConditionFalse, equinixv1.ReasonIdle, "no servers are being removed")
	}
	switch {
	case ready == want && len(cur) == want:
		r.SetCondition(equinixv1.PoolReady, metav1.ConditionTrue, equinixv1.ReasonAllReady, fmt.Sprintf("all %d servers are managed with a Ready node", want))
	case off > 0 && ready+off == want && len(cur) == want:
		r.SetCondition(equinixv1.PoolReady, metav1.ConditionTrue, equinixv1.ReasonAllReady,
			fmt.Sprintf("%d of %d servers are managed with a Ready node; %d switched off on request", ready, want, off))
	default:
		msg := fmt.Sprintf("%d of %d servers are managed with a Ready node", ready, want)
		if waits := serverWaits(r.insts); waits != "" {
			msg += "; " + waits
		}
		r.SetCondition(equinixv1.PoolReady, metav1.ConditionFalse, equinixv1.ReasonNotAllReady, msg)
	}

	switch {
	case st.FailedGeneration != 0:
		st.Status = equinixv1.PoolPhaseFailed
	case ready+off == want && len(cur) == want && deleting == 0:
		st.Status = equinixv1.PoolPhaseReady
	case ready == 0 && (conditions.IsFalse(st.Conditions, equinixv1.PoolCredentialsReady) || conditions.IsFalse(st.Conditions, equinixv1.PoolJoinInfoReady) ||
		conditions.IsFalse(st.Conditions, equinixv1.PoolInstallDiskFits)):
		st.Status = equinixv1.PoolPhasePending
	case len(cur) != want || deleting > 0:
		st.Status = equinixv1.PoolPhaseScaling
	case unhealthy > 0:
		st.Status = equinixv1.PoolPhaseDegraded
	default:
		st.Status = equinixv1.PoolPhaseProvisioning
	}
}

// serverWaits says what keeps the pool's servers that are not managed from
// progressing, most common first: the first condition each one has that is
// not True, with the message of one of them.
func serverWaits(insts []*equinixv1.Instance) string {
	type group struct {
		n       int
		message string
	}
	groups := map[string]*group{}
	for _, i := range insts {
		if i.DeletionTimestamp != nil || i.Status.Status == equinixv1.PhaseManaged {
			continue
		}
		reason, message := blocker(i)
		if reason == "" {
			continue
		}
		g := groups[reason]
		if g == nil {
			g = &group{message: message}
			groups[reason] = g
		}
		g.n++
	}
	reasons := make([]string, 0, len(groups))
	for r := range groups {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(a, b int) bool {
		if groups[reasons[a]].n != groups[reasons[b]].n {
			return groups[reasons[a]].n > groups[reasons[b]].n
		}
		return reasons[a] < reasons[b]
	})
	parts := make([]string, 0, len(reasons))
	for _, r := range reasons {
		if !equinixv1.IsWarning(r) {
			// Progress needs no explanation, and its changing message
			// (a percentage) would rewrite the pool's status at every poll.
			parts = append(parts, fmt.Sprintf("%d %s", groups[r].n, r))
			continue
		}
		parts = append(parts, fmt.Sprintf("%d waiting on %s (%s)", groups[r].n, r, groups[r].message))
	}
	return strings.Join(parts, "; ")
}

// blockingConditions are the Instance conditions, in chain order, whose
// not-True state says why a server waits.
var blockingConditions = []string{
	equinixv1.InstanceCredentialsReady, equinixv1.InstanceDeviceCreated, equinixv1.InstanceInstallConfigured, equinixv1.InstanceDeviceActive,
	equinixv1.InstanceNetworkConfigured, equinixv1.InstanceNodeJoined, equinixv1.InstanceReady,
}

func blocker(inst *equinixv1.Instance) (reason, message string) {
	for _, t := range blockingConditions {
		for _, c := range inst.Status.Conditions {
			if c.Type == t && c.Status != "True" {
				return c.Reason, c.Message
			}
		}
	}
	return "", ""
}
