package instancepool

import (
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// replaceFailed deletes the servers that failed: before joining (the device
// failed, or the startup timeout passed), counting the failures in a row; and
// without counting, after joining when the device vanished (drift), or when
// no device was ever recorded (a create whose answer was lost). The scale
// step then creates their replacements. Once maxProvisionAttempts servers in
// a row have failed before joining, the pool stops and says so until its spec
// changes.
func (r *poolRun) replaceFailed(now time.Time) error {
	st := &r.Obj.Status
	if st.FailedGeneration != 0 && st.FailedGeneration != r.Obj.Generation {
		st.FailedGeneration, st.ConsecutiveFailures = 0, 0
		conditions.Remove(&st.Conditions, equinixv1.PoolProvisioningFailed)
	}
	for _, inst := range active(r.insts) {
		// A server that joined after the last failure proves the pool's
		// template works: the count starts again.
		if j := inst.Status.JoinedAt; j != nil && st.LastProvisionFailure != nil && j.After(st.LastProvisionFailure.Time) && st.FailedGeneration == 0 {
			st.ConsecutiveFailures = 0
		}
	}
	startup := 45 * time.Minute
	if d := r.Obj.Spec.Remediation.StartupTimeout; d != nil {
		startup = d.Duration
	}
	for _, inst := range active(r.insts) {
		if t := inst.Status.TerminationTime; t != nil {
			// The provider takes the server back at t: its node went into
			// maintenance mode when that was seen, and its successor
			// starts now rather than after it vanished. Not a failure of
			// the pool's template.
			if err := r.deleteInstance(inst, equinixv1.ReasonReclaimScheduled, fmt.Sprintf("replacing instance %s now: its server is taken back at %s",
				inst.Name, t.UTC().Format(time.RFC3339))); err != nil {
				return err
			}
			continue
		}
		if failedUncounted(inst) {
			if err := r.deleteInstance(inst, equinixv1.ReasonReplacing, fmt.Sprintf("replacing instance %s: %s", inst.Name, failureMessage(inst))); err != nil {
				return err
			}
			continue
		}
		if inst.Status.JoinedAt != nil {
			continue
		}
		reason := ""
		if inst.Status.Status == equinixv1.PhaseFailed {
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
func failedUncounted(inst *equinixv1.Instance) bool {
	return inst.Status.Status == equinixv1.PhaseFailed && (inst.Status.JoinedAt != nil || inst.Status.InstanceID == "")
}

func (r *poolRun) failedBeforeJoin(inst *equinixv1.Instance, reason string) error {
	st := &r.Obj.Status
	st.ConsecutiveFailures++
	metrics.ProvisionFailures.WithLabelValues(r.Obj.Name).Inc()
	now := metav1.Now()
	st.LastProvisionFailure = &now
	if limit := r.Obj.Spec.Remediation.MaxProvisionAttempts; limit > 0 && st.ConsecutiveFailures >= limit {
		// Stop: this server stays (its Instance still owns the device, so
		// nothing leaks) for a person to inspect, and no replacement is made.
		st.FailedGeneration = r.Obj.Generation
		r.SetCondition(equinixv1.PoolProvisioningFailed, metav1.ConditionTrue, equinixv1.ReasonTooManyFailures,
			fmt.Sprintf("%d servers in a row failed before joining (last, %s: %s); no more are created until the pool spec changes",
				st.ConsecutiveFailures, inst.Name, reason))
		return nil
	}
	return r.deleteInstance(inst, equinixv1.ReasonReplacing, fmt.Sprintf("replacing instance %s: %s", inst.Name, reason))
}

func failureMessage(inst *equinixv1.Instance) string {
	if c := conditions.Get(inst.Status.Conditions, equinixv1.InstanceDeviceActive); c != nil && c.Status == metav1.ConditionFalse {
		return c.Message
	}
	return "it failed"
}

func (r *poolRun) deleteInstance(inst *equinixv1.Instance, reason, message string) error {
	err := r.h.instances.Delete(inst.Name, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &inst.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting instance %s: %w", inst.Name, err)
	}
	r.markDeleting(inst.UID)
	r.Eventf(reason, "%s", message)
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

// timedOut reports whether a server that never joined has run out of its
// startup time (remediation.startupTimeout, counted from its creation, or
// for a server of one's own from its network boot).
func timedOut(inst *equinixv1.Instance, timeout time.Duration, now time.Time) (bool, time.Duration) {
	if inst.Status.JoinedAt != nil || inst.DeletionTimestamp != nil || timeout <= 0 || inst.OffOnRequest() {
		// A server switched off on request before it joined waits for
		// power, not for its install.
		return false, 0
	}
	start := inst.CreationTimestamp
	if inst.Spec.Owned() {
		// Until its network boot an Instance waits for a free server or
		// for what a server joins with, each said in its conditions: no
		// install has started that could fail.
		if inst.Status.NetworkBootRequestedAt == nil {
			return false, 0
		}
		start = *inst.Status.NetworkBootRequestedAt
	}
	left := start.Add(timeout).Sub(now)
	return left <= 0, left
}

// replacementBackoff is how long the pool waits before creating the next
// server after n consecutive failures: base, doubling, at most 10 minutes.
func replacementBackoff(base time.Duration, n int32) time.Duration {
	if n <= 0 {
		return 0
	}
	d := base
	for i := int32(1); i < n && d < 10*time.Minute; i++ {
		d *= 2
	}
	return min(d, 10*time.Minute)
}
