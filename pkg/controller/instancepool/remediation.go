package instancepool

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// remediate replaces servers whose node stayed unhealthy for
// nodeCleanupWaitInterval, within the pool's guards (see planRemediation).
func (r *poolRun) remediate(now time.Time) error {
	nodes, err := r.h.nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	plan := planRemediation(r.Obj, r.insts, nodes, now)
	if plan.NextCheck > 0 {
		r.Requeue(plan.NextCheck)
	}
	for _, inst := range plan.Replace {
		since := inst.Status.UnhealthySince.Time
		if err := r.deleteInstance(inst, equinixv1.ReasonRemediating, fmt.Sprintf("replacing instance %s: node %s has not been Ready since %s (nodeCleanupWaitInterval %s)",
			inst.Name, inst.Status.NodeName, since.UTC().Format(time.RFC3339), r.Obj.Spec.NodeCleanupWaitInterval.Duration)); err != nil {
			return err
		}
		metrics.Remediations.WithLabelValues(r.Obj.Name).Inc()
	}
	if len(plan.Replace) > 0 || (plan.InFlight > 0 && r.remediating()) {
		r.SetCondition(equinixv1.PoolRemediating, metav1.ConditionTrue, equinixv1.ReasonReplacing,
			fmt.Sprintf("%d unhealthy server(s) being replaced", len(plan.Replace)+plan.InFlight))
	} else {
		r.SetCondition(equinixv1.PoolRemediating, metav1.ConditionFalse, equinixv1.ReasonIdle, "no unhealthy server is being replaced")
	}
	if plan.BlockedReason != "" {
		r.SetCondition(equinixv1.PoolRemediationBlocked, metav1.ConditionTrue, plan.BlockedReason, plan.BlockedMessage)
		r.Requeue(r.h.settings.PollInterval * 10)
	} else {
		r.SetCondition(equinixv1.PoolRemediationBlocked, metav1.ConditionFalse, equinixv1.ReasonNotBlocked, "no due replacement is held back")
	}
	return nil
}

// remediating reports whether a replacement started by remediation is still
// under way (its Remediating condition was True when this run began).
func (r *poolRun) remediating() bool {
	return conditions.IsTrue(r.Stored().Conditions, equinixv1.PoolRemediating)
}

// remediationPlan is what the pool should do about unhealthy servers now.
type remediationPlan struct {
	// Replace are the Instances to delete now; the pool's scale step replaces them.
	Replace []*equinixv1.Instance
	// Blocked says why a due replacement waits (empty when none is blocked).
	BlockedReason, BlockedMessage string
	// InFlight counts replacements still under way.
	InFlight int
	// NextCheck is when an unhealthy server becomes due; zero when none will.
	NextCheck time.Duration
}

// planRemediation applies the pool's guards, in this order, to the servers
// whose node has not been Ready for nodeCleanupWaitInterval (counted from the
// Ready condition's lastTransitionTime, never from the last heartbeat):
//   - a server annotated equinix.harvesterhci.io/skip-remediation is never replaced;
//   - nothing is replaced while more than maxUnhealthy servers are unhealthy,
//     so a partition that cuts the controller off from many nodes cannot wipe
//     the pool;
//   - at most maxInFlight replacements run at once (a replacement runs from the
//     deletion of the unhealthy server until its successor is managed);
//   - a management node whose removal would break the etcd quorum of the
//     Harvester control plane is never replaced: Harvester promotes another
//     node only when one is deleted, and three managers tolerate one failure.
func planRemediation(pool *equinixv1.InstancePool, insts []*equinixv1.Instance, nodes []*corev1.Node, now time.Time) remediationPlan {
	var plan remediationPlan
	interval := pool.Spec.NodeCleanupWaitInterval
	cur := active(insts)
	plan.InFlight = inFlight(insts)
	if interval == nil {
		return plan
	}
	unhealthy, due := unhealthyServers(cur, interval.Duration, now, &plan)
	if len(due) == 0 {
		return plan
	}
	if limit := maxUnhealthy(pool); len(unhealthy) > limit {
		plan.BlockedReason = equinixv1.ReasonTooManyUnhealthy
		plan.BlockedMessage = fmt.Sprintf("%d of %d servers are unhealthy, more than remediation.maxUnhealthy allows (%d): replacements wait, in case this is a network partition rather than failed servers",
			len(unhealthy), len(cur), limit)
		return plan
	}
	byName := map[string]*corev1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	room := int(pool.Spec.Remediation.MaxInFlight) - plan.InFlight
	if pool.Spec.Remediation.MaxInFlight <= 0 {
		room = 1 - plan.InFlight
	}
	var blocked []string
	for _, inst := range due {
		if inst.Annotations[equinixv1.AnnotationSkipRemediation] == "true" {
			blocked = append(blocked, fmt.Sprintf("%s carries %s", inst.Name, equinixv1.AnnotationSkipRemediation))
			plan.BlockedReason = orReason(plan.BlockedReason, equinixv1.ReasonSkipAnnotation)
			continue
		}
		if node := byName[inst.Status.NodeName]; node != nil && harvester.IsManagementNode(node) {
			if ok, why := harvester.RemovalKeepsQuorum(nodes, node); !ok {
				blocked = append(blocked, fmt.Sprintf("%s is a management node: %s", inst.Name, why))
				plan.BlockedReason = orReason(plan.BlockedReason, equinixv1.ReasonQuorumGuard)
				continue
			}
		}
		if room <= 0 {
			blocked = append(blocked, fmt.Sprintf("%s waits: %d replacement(s) already under way (remediation.maxInFlight %d)",
				inst.Name, plan.InFlight+len(plan.Replace), max(1, pool.Spec.Remediation.MaxInFlight)))
			plan.BlockedReason = orReason(plan.BlockedReason, equinixv1.ReasonReplacementInFlight)
			continue
		}
		plan.Replace = append(plan.Replace, inst)
		room--
	}
	plan.BlockedMessage = strings.Join(blocked, "; ")
	return plan
}

func orReason(cur, r string) string {
	if cur == "" {
		return r
	}
	return cur
}

// unhealthyServers returns the joined servers whose node is not Ready, and the
// ones unhealthy for at least interval (oldest first); it records when the
// next one becomes due.
func unhealthyServers(insts []*equinixv1.Instance, interval time.Duration, now time.Time, plan *remediationPlan) (unhealthy, due []*equinixv1.Instance) {
	for _, inst := range insts {
		if inst.Status.JoinedAt == nil || inst.Status.Status != equinixv1.PhaseUnhealthy || inst.Status.UnhealthySince == nil {
			continue
		}
		unhealthy = append(unhealthy, inst)
		wait := inst.Status.UnhealthySince.Add(interval).Sub(now)
		if wait <= 0 {
			due = append(due, inst)
		} else if plan.NextCheck == 0 || wait < plan.NextCheck {
			plan.NextCheck = wait
		}
	}
	sort.SliceStable(due, func(a, b int) bool {
		return due[a].Status.UnhealthySince.Before(due[b].Status.UnhealthySince)
	})
	return unhealthy, due
}

// inFlight counts replacements under way: servers being deleted and servers
// not yet joined.
func inFlight(insts []*equinixv1.Instance) int {
	n := 0
	for _, i := range insts {
		if i.DeletionTimestamp != nil || (i.Status.JoinedAt == nil && i.Status.Status != equinixv1.PhaseFailed) {
			n++
		}
	}
	return n
}

// maxUnhealthy resolves remediation.maxUnhealthy against count: a number, or a
// percentage rounded down, never below one server (a one-server pool can
// still replace its server).
func maxUnhealthy(pool *equinixv1.InstancePool) int {
	v := pool.Spec.Remediation.MaxUnhealthy
	if v == nil {
		d := intstr.FromString("40%")
		v = &d
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, int(pool.Spec.Count), false)
	if err != nil {
		n = int(math.Floor(0.4 * float64(pool.Spec.Count)))
	}
	return max(1, n)
}
