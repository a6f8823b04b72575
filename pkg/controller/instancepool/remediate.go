package instancepool

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
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
		if err := r.deleteInstance(inst, v1.ReasonRemediating, fmt.Sprintf("replacing instance %s: node %s has not been Ready since %s (nodeCleanupWaitInterval %s)",
			inst.Name, inst.Status.NodeName, since.UTC().Format(time.RFC3339), r.Obj.Spec.NodeCleanupWaitInterval.Duration)); err != nil {
			return err
		}
		metrics.Remediations.WithLabelValues(r.Obj.Name).Inc()
	}
	if len(plan.Replace) > 0 || (plan.InFlight > 0 && r.remediating()) {
		r.SetCondition(v1.PoolRemediating, metav1.ConditionTrue, v1.ReasonReplacing,
			fmt.Sprintf("%d unhealthy server(s) being replaced", len(plan.Replace)+plan.InFlight))
	} else {
		r.SetCondition(v1.PoolRemediating, metav1.ConditionFalse, v1.ReasonIdle, "no unhealthy server is being replaced")
	}
	if plan.BlockedReason != "" {
		r.SetCondition(v1.PoolRemediationBlocked, metav1.ConditionTrue, plan.BlockedReason, plan.BlockedMessage)
		r.Requeue(r.h.settings.PollInterval * 10)
	} else {
		r.SetCondition(v1.PoolRemediationBlocked, metav1.ConditionFalse, v1.ReasonNotBlocked, "no due replacement is held back")
	}
	return nil
}

// remediating reports whether a replacement started by remediation is still
// under way (its Remediating condition was True when this run began).
func (r *poolRun) remediating() bool {
	return conditions.IsTrue(r.Stored().Conditions, v1.PoolRemediating)
}
