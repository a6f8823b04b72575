package instancepool

import (
	"errors"
	"fmt"
	"time"

	"github.com/rancher/wrangler/v3/pkg/generic"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/common"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
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
	// backingOff is how long the next creation waits after failures.
	backingOff time.Duration
	// scaleDownHeld says why a scale-down could not remove enough servers.
	scaleDownHeld string
	// projectChanged is set while the credentials Secret names another
	// project than the pool's servers were made in: no server is created.
	projectChanged bool
}

// SyncPool keeps the pool at count Instances and reports its status.
func (h *Handler) SyncPool(_ string, pool *v1.InstancePool) (*v1.InstancePool, error) {
	if pool == nil || pool.DeletionTimestamp != nil {
		return pool, nil
	}
	r, err := h.newRun(pool)
	if err != nil {
		return pool, err
	}
	return r.finish(r.sync())
}

func (h *Handler) newRun(pool *v1.InstancePool) (*poolRun, error) {
	insts, err := h.instances.Cache().GetByIndex(IndexByPool, pool.Name)
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
	if !equality.Semantic.DeepEqual(r.persisted, r.pool.Status) {
		updated, uerr := r.h.pools.UpdateStatus(r.pool)
		if uerr != nil {
			return r.pool, fmt.Errorf("updating status of pool %s: %w", r.pool.Name, uerr)
		}
		r.pool = updated
	}
	if after := r.After(); after > 0 && err == nil {
		r.h.pools.EnqueueAfter(r.pool.Name, after)
	}
	return r.pool, err
}

// checkInputs reports on the pool what its servers will need, without any Metal
// call: a readable credentials Secret and the join information. A refusal by
// the API is seen by the Instances and summarized here.
func (r *poolRun) checkInputs() {
	creds, err := r.h.credentials.For(r.pool.Spec.CredentialsSecret)
	moved := ""
	if err == nil {
		moved = r.projectMoved(creds.ProjectID)
	}
	r.projectChanged = moved != ""
	if err != nil {
		r.setCondition(v1.PoolCredentialsReady, metav1.ConditionFalse, v1.ReasonCredentialsMissing, err.Error())
	} else if moved != "" {
		r.setCondition(v1.PoolCredentialsReady, metav1.ConditionFalse, v1.ReasonProjectChanged, moved)
	} else if refused := r.instanceCondition(v1.InstanceCredentialsReady, metav1.ConditionFalse); refused != nil {
		r.setCondition(v1.PoolCredentialsReady, metav1.ConditionFalse, refused.Reason, refused.Message)
	} else {
		r.setCondition(v1.PoolCredentialsReady, metav1.ConditionTrue, v1.ReasonCredentialsReady,
			fmt.Sprintf("Secret %s holds the Equinix Metal credentials", r.h.credentials.RefFor(r.pool.Spec.CredentialsSecret)))
	}
	_, joinErr := r.h.joinInfo.Join()
	version := ""
	if joinErr == nil {
		version, joinErr = r.h.joinInfo.Version(r.pool.Spec.HarvesterVersion)
	}
	if joinErr != nil {
		r.setCondition(v1.PoolJoinInfoReady, metav1.ConditionFalse, v1.ReasonJoinInfoMissing, joinErr.Error())
	} else if missing := r.releaseMissing(version); missing != "" {
		r.setCondition(v1.PoolJoinInfoReady, metav1.ConditionFalse, v1.ReasonReleaseNotFound, missing)
	} else {
		r.setCondition(v1.PoolJoinInfoReady, metav1.ConditionTrue, v1.ReasonJoinInfoReady,
			"the cluster URL, join token and Harvester version are known")
	}
}

// releaseMissing says why the pool's release cannot be installed, when its
// ISO is known not to exist; "" when it exists or the check cannot tell.
func (r *poolRun) releaseMissing(version string) string {
	if r.h.releases == nil {
		return ""
	}
	iso, err := harvester.ISOURL(version, r.pool.Spec.ISOURL)
	if err != nil {
		return ""
	}
	if err := r.h.releases.Check(r.h.ctx, iso); errors.Is(err, harvester.ErrReleaseMissing) {
		return fmt.Sprintf("the installer ISO of Harvester %s is not there (%v), so no server is created to install it: set spec.harvesterVersion (or spec.isoURL) to a published release", version, err)
	}
	return ""
}

// instanceCondition returns the first active Instance condition with that status.
func (r *poolRun) instanceCondition(condType string, status metav1.ConditionStatus) *metav1.Condition {
	for _, i := range active(r.insts) {
		if c := conditions.Get(i.Status.Conditions, condType); c != nil && c.Status == status {
			return c
		}
	}
	return nil
}

// replaceFailed deletes the servers that failed: before joining (the device
// failed, or the startup timeout passed), counting the failures in a row; and
// without counting, after joining when the device vanished (drift), or when
// no device was ever recorded (a create whose answer was lost). The scale
// step then creates their replacements. Once maxProvisionAttempts servers in
// a row have failed before joining, the pool stops and says so until its spec
// changes.
func (r *poolRun) replaceFailed(now time.Time) error {
	st := &r.pool.Status
	if st.FailedGeneration != 0 && st.FailedGeneration != r.pool.Generation {
		st.FailedGeneration, st.ConsecutiveFailures = 0, 0
		conditions.Remove(&st.Conditions, v1.PoolProvisioningFailed)
	}
	for _, inst := range active(r.insts) {
		// A server that joined after the last failure proves the pool's
		// template works: the count starts again.
		if j := inst.Status.JoinedAt; j != nil && st.LastProvisionFailure != nil && j.After(st.LastProvisionFailure.Time) && st.FailedGeneration == 0 {
			st.ConsecutiveFailures = 0
		}
	}
	startup := 45 * time.Minute
	if d := r.pool.Spec.Remediation.StartupTimeout; d != nil {
		startup = d.Duration
	}
	for _, inst := range active(r.insts) {
		if failedUncounted(inst) {
			if err := r.deleteInstance(inst, v1.ReasonReplacing, fmt.Sprintf("replacing instance %s: %s", inst.Name, failureMessage(inst))); err != nil {
				return err
			}
			continue
		}
		if inst.Status.JoinedAt != nil {
			continue
		}
		reason := ""
		if inst.Status.Status == v1.PhaseFailed {
			reason = failureMessage(inst)
		} else if out, left := timedOut(inst, startup, now); out {
			reason = fmt.Sprintf("it did not join within remediation.startupTimeout (%s)", startup)
		} else if left > 0 {
			r.Requeue(left)
		}
		if reason == "" || st.FailedGeneration != 0 {
			// After ProvisioningFailed the failed server stays for inspection.
			continue
		}
		if err := r.failedBeforeJoin(inst, reason); err != nil {
			return err
		}
	}
	return nil
}

// failedUncounted says whether a failed server says nothing about the pool's
// template: it joined before failing (its device vanished), or no device was
// ever recorded for it (its create's answer was lost, and the device never
// appeared or was removed at once).
func failedUncounted(inst *v1.Instance) bool {
	return inst.Status.Status == v1.PhaseFailed && (inst.Status.JoinedAt != nil || inst.Status.InstanceID == "")
}

func (r *poolRun) failedBeforeJoin(inst *v1.Instance, reason string) error {
	st := &r.pool.Status
	st.ConsecutiveFailures++
	metrics.ProvisionFailures.WithLabelValues(r.pool.Name).Inc()
	now := metav1.Now()
	st.LastProvisionFailure = &now
	if max := r.pool.Spec.Remediation.MaxProvisionAttempts; max > 0 && st.ConsecutiveFailures >= max {
		// Stop: this server stays (its Instance still owns the device, so
		// nothing leaks) for a person to inspect, and no replacement is made.
		st.FailedGeneration = r.pool.Generation
		r.setCondition(v1.PoolProvisioningFailed, metav1.ConditionTrue, v1.ReasonTooManyFailures,
			fmt.Sprintf("%d servers in a row failed before joining (last, %s: %s); no more are created until the pool spec changes",
				st.ConsecutiveFailures, inst.Name, reason))
		return nil
	}
	return r.deleteInstance(inst, v1.ReasonReplacing, fmt.Sprintf("replacing instance %s: %s", inst.Name, reason))
}

func failureMessage(inst *v1.Instance) string {
	if c := conditions.Get(inst.Status.Conditions, v1.InstanceDeviceActive); c != nil && c.Status == metav1.ConditionFalse {
		return c.Message
	}
	return "it failed"
}

// remediate replaces servers whose node stayed unhealthy for
// nodeCleanupWaitInterval, within the pool's guards (see PlanRemediation).
func (r *poolRun) remediate(now time.Time) error {
	nodes, err := r.h.nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	plan := PlanRemediation(r.pool, r.insts, nodes, now)
	if plan.NextCheck > 0 {
		r.Requeue(plan.NextCheck)
	}
	for _, inst := range plan.Replace {
		since := inst.Status.UnhealthySince.Time
		if err := r.deleteInstance(inst, v1.ReasonRemediating, fmt.Sprintf("replacing instance %s: node %s has not been Ready since %s (nodeCleanupWaitInterval %s)",
			inst.Name, inst.Status.NodeName, since.UTC().Format(time.RFC3339), r.pool.Spec.NodeCleanupWaitInterval.Duration)); err != nil {
			return err
		}
		metrics.Remediations.WithLabelValues(r.pool.Name).Inc()
	}
	if len(plan.Replace) > 0 || (plan.InFlight > 0 && r.remediating()) {
		r.setCondition(v1.PoolRemediating, metav1.ConditionTrue, v1.ReasonReplacing,
			fmt.Sprintf("%d unhealthy server(s) being replaced", len(plan.Replace)+plan.InFlight))
	} else {
		r.setCondition(v1.PoolRemediating, metav1.ConditionFalse, v1.ReasonIdle, "no unhealthy server is being replaced")
	}
	if plan.BlockedReason != "" {
		r.setCondition(v1.PoolRemediationBlocked, metav1.ConditionTrue, plan.BlockedReason, plan.BlockedMessage)
		r.Requeue(r.h.settings.PollInterval * 10)
	} else {
		r.setCondition(v1.PoolRemediationBlocked, metav1.ConditionFalse, v1.ReasonNotBlocked, "no due replacement is held back")
	}
	return nil
}

// remediating reports whether a replacement started by remediation is still
// under way (its Remediating condition was True when this run began).
func (r *poolRun) remediating() bool {
	return conditions.IsTrue(r.persisted.Conditions, v1.PoolRemediating)
}

func (r *poolRun) deleteInstance(inst *v1.Instance, reason, message string) error {
	err := r.h.instances.Delete(inst.Name, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &inst.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting instance %s: %w", inst.Name, err)
	}
	r.markDeleting(inst.UID)
	r.Eventf(r.pool, reason, "%s", message)
	return nil
}

// markDeleting records that the run deleted an Instance, so that the rest of
// the run counts it as being deleted. The run's Instances come from the
// shared informer cache and are read-only: the entry is replaced by a copy
// the run owns, never changed in place.
func (r *poolRun) markDeleting(uid types.UID) {
	now := metav1.Now()
	for i, inst := range r.insts {
		if inst.UID == uid && inst.DeletionTimestamp == nil {
			marked := inst.DeepCopy()
			marked.DeletionTimestamp = &now
			r.insts[i] = marked
		}
	}
}

// RemovePool deletes every Instance of the pool and keeps the pool until they
// are all gone, so that `kubectl delete instancepool` returns only when the
// servers are released.
func (h *Handler) RemovePool(_ string, pool *v1.InstancePool) (*v1.InstancePool, error) {
	r, err := h.newRun(pool)
	if err != nil {
		return pool, err
	}
	r.pool.Status.Status = v1.PoolPhaseDeleting
	live, err := r.liveInstances()
	if err != nil {
		return pool, err
	}
	for _, inst := range active(live) {
		if err := r.deleteInstance(inst, v1.ReasonScalingDown, fmt.Sprintf("pool deleted: deleting instance %s", inst.Name)); err != nil {
			return pool, err
		}
	}
	if len(live) == 0 {
		metrics.Instances.DeletePartialMatch(map[string]string{"pool": pool.Name})
	}
	if len(live) > 0 {
		r.setCondition(v1.PoolScalingDown, metav1.ConditionTrue, v1.ReasonPoolDeleted,
			fmt.Sprintf("waiting for %d instance(s) to release their servers", len(live)))
		r.Requeue(h.settings.PollInterval)
		updated, err := r.finish(nil)
		if err != nil {
			return updated, err
		}
		return updated, generic.ErrSkip
	}
	return pool, nil
}

// liveInstances lists the pool's Instances from the API server rather than
// the cache: creating or waiting on a stale view could double a pool.
func (r *poolRun) liveInstances() ([]*v1.Instance, error) {
	list, err := r.h.instances.List(metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{v1.LabelPool: r.pool.Name}).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("listing instances of pool %s: %w", r.pool.Name, err)
	}
	out := make([]*v1.Instance, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].Spec.PoolName == r.pool.Name {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// syncInPlace copies the pool's VLAN lists onto its Instances made from the
// same server template; the networking chain then converges their ports
// without reinstalling anything. An Instance that never asked for a device
// is not a server yet: it takes the whole template (a fixed Harvester
// version, SSH keys, tags), which otherwise reach only servers created later.
func (r *poolRun) syncInPlace() error {
	hash := TemplateHash(&r.pool.Spec.InstanceTemplate)
	want := r.pool.Spec.NetworkingConfiguration.InterfaceConfiguration
	for _, inst := range active(r.insts) {
		if inst.Annotations[v1.AnnotationTemplateHash] != hash {
			continue
		}
		upd := inst.DeepCopy()
		reason, what := v1.ReasonVLANsChanged, "the pool's new VLAN list"
		if notAServerYet(inst) {
			upd.Spec.InstanceTemplate = *r.pool.Spec.InstanceTemplate.DeepCopy()
			reason, what = v1.ReasonTemplateChanged, "the pool's template (it has no server yet)"
		} else {
			upd.Spec.NetworkingConfiguration.InterfaceConfiguration = nil
			for _, ic := range want {
				upd.Spec.NetworkingConfiguration.InterfaceConfiguration = append(upd.Spec.NetworkingConfiguration.InterfaceConfiguration, *ic.DeepCopy())
			}
		}
		if equality.Semantic.DeepEqual(inst.Spec, upd.Spec) {
			continue
		}
		if _, err := r.h.instances.Update(upd); err != nil {
			return fmt.Errorf("updating instance %s: %w", inst.Name, err)
		}
		r.Eventf(r.pool, reason, "instance %s takes %s", inst.Name, what)
	}
	return nil
}

// notAServerYet reports whether no device create was ever sent for the
// Instance: the project is recorded before the first one.
func notAServerYet(inst *v1.Instance) bool {
	return inst.Status.InstanceID == "" && inst.Status.ProjectID == ""
}
