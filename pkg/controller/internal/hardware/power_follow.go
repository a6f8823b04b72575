package hardware

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	hardwarev1 "github.com/harvester/harvester-equinix-addon/pkg/apis/hardware/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// followPowerAction watches a call under way. One the API took succeeds
// once the server is there. One whose answer was lost (or whose sender
// died) is never simply sent again: if the server changed, it was carried
// out; if it has not changed by the time such a call could still land
// (twice the call timeout), it was not, and an on or off is sent again.
// A reboot leaves no trace in the server's state, so a lost reboot ends
// failed rather than risk a second one.
func (r *run) followPowerAction() error {
	st := r.Hardware()
	la := st.LastPowerAction
	state, err := r.machine.PowerState(r.s.ctx)
	if err != nil {
		return r.readFailed(la, err)
	}
	st.PowerState = string(state)
	if la.Result == hardwarev1.PowerResultSending && (reached(la.Action, state, false) || underway(la.Action, state)) {
		la.Result = hardwarev1.PowerResultSent
		la.Message = fmt.Sprintf("the answer to the %s was lost, but the server is %s: it was carried out", verb(la.Action), state)
	}
	if la.Result == hardwarev1.PowerResultSent {
		switch {
		case reached(la.Action, state, true) && r.nodeBack(la):
			r.succeed(la, r.doneMessage(state))
		case la.Sent != nil && r.now.Sub(la.Sent.Time) > powerTimeout && reached(la.Action, state, true):
			r.fail(la, fmt.Sprintf("the server is %s, but node %s did not come back Ready within %s of the call", state, r.nodeName(), powerTimeout))
		case la.Sent != nil && r.now.Sub(la.Sent.Time) > powerTimeout:
			r.fail(la, fmt.Sprintf("the server did not get %s within %s of the call (it is %s)", powerTarget(la.Action), powerTimeout, state))
		default:
			r.poll()
		}
		return nil
	}
	if left := r.settleEnd(la).Sub(r.now); left > 0 {
		r.Requeue(min(left, r.PowerRecheck(r.s.settings.PollInterval)))
		return nil
	}
	sent := la.Sent.UTC().Format(time.RFC3339)
	switch {
	case la.Action == hardwarev1.PowerActionReboot:
		r.fail(la, fmt.Sprintf("the answer to the reboot sent at %s was lost, and a reboot leaves no trace in the server's state, "+
			"so whether it happened is unknown; it is not sent again: set a newer spec.rebootRequestedAt to reboot", sent))
	case la.Attempts >= maxUnconfirmed:
		r.fail(la, fmt.Sprintf("%d calls for the %s were lost on the way and the server never changed", la.Attempts, verb(la.Action)))
	default:
		la.Result = hardwarev1.PowerResultWaiting
		la.Message = fmt.Sprintf("the %s sent at %s did not reach the server (its answer was lost and the server is still %s); it is sent again",
			verb(la.Action), sent, state)
		return r.carryOut()
	}
	return nil
}

// nodeBack says whether a power-on or reboot is over for the node too: it
// is Ready again since the call (a server without a node is over once on).
// Until then its NotReady node does not count against it.
func (r *run) nodeBack(la *hardwarev1.PowerActionStatus) bool {
	if la.Action == hardwarev1.PowerActionOff || r.node == nil {
		return true
	}
	ready := harvester.NodeReadyCondition(r.node)
	if ready == nil || ready.Status != corev1.ConditionTrue {
		return false
	}
	// Transition times have whole seconds.
	return la.Sent == nil || !ready.LastTransitionTime.Time.Before(la.Sent.Truncate(time.Second))
}

func (r *run) doneMessage(state machine.PowerState) string {
	if r.node != nil && r.Joined() {
		return fmt.Sprintf("the server is %s and node %s is Ready", state, r.node.Name)
	}
	return fmt.Sprintf("the server is %s", state)
}

// settleEnd is when a call whose answer was lost can no longer land.
func (r *run) settleEnd(la *hardwarev1.PowerActionStatus) time.Time {
	if la.Sent == nil {
		return r.now
	}
	return la.Sent.Add(2 * r.s.settings.MetalTimeout)
}

// readFailed handles a failed power state read.
func (r *run) readFailed(la *hardwarev1.PowerActionStatus, err error) error {
	switch failure.ClassOf(err) {
	case failure.NotFound:
		r.fail(la, "the machine is gone: "+failure.Message(err))
		return nil
	case failure.Throttled:
		r.Requeue(max(failure.RetryAfter(err), r.s.settings.PollInterval))
		return nil
	case failure.Unauthorized:
		// The provisioning chain's CredentialsReady says so.
		r.Requeue(time.Minute)
		return nil
	}
	return fmt.Errorf("reading the power of %s: %w", r.Name(), err)
}

func (r *run) succeed(la *hardwarev1.PowerActionStatus, msg string) {
	r.end(la, hardwarev1.PowerResultSucceeded, msg)
	r.powerCondition(metav1.ConditionTrue, equinixv1.ReasonPowerActionSucceeded, fmt.Sprintf("the %s requested at %s is done: %s",
		verb(la.Action), la.Requested.UTC().Format(time.RFC3339), msg))
}

func (r *run) fail(la *hardwarev1.PowerActionStatus, msg string) {
	r.end(la, hardwarev1.PowerResultFailed, msg)
	r.powerCondition(metav1.ConditionFalse, equinixv1.ReasonPowerActionFailed, fmt.Sprintf("the %s requested at %s failed: %s",
		verb(la.Action), la.Requested.UTC().Format(time.RFC3339), msg))
}

// end closes a request.
func (r *run) end(la *hardwarev1.PowerActionStatus, result hardwarev1.PowerActionResult, msg string) {
	now := metav1.NewTime(r.now)
	la.Result, la.Completed, la.NotBefore, la.Message = result, &now, nil, msg
	metrics.PowerActions.WithLabelValues(string(la.Action), string(result)).Inc()
	if result == hardwarev1.PowerResultCancelled {
		r.powerCondition(metav1.ConditionTrue, equinixv1.ReasonPowerActionCancelled, fmt.Sprintf("the %s was cancelled: %s", verb(la.Action), msg))
	}
}

func (r *run) powerCondition(status metav1.ConditionStatus, reason, msg string) {
	r.SetCondition(equinixv1.InstancePowerSynced, status, reason, msg)
}

// poll asks to check a power action's effect again, at the target's pace.
func (r *run) poll() { r.Requeue(r.PowerRecheck(r.s.settings.PollInterval)) }

// backoff is the wait after n refused calls: twice the poll interval,
// doubling, at most maxRetryBackoff.
func (r *run) backoff(n int32) time.Duration {
	d := max(2*r.s.settings.PollInterval, time.Second)
	for i := int32(1); i < n && d < maxRetryBackoff; i++ {
		d *= 2
	}
	return min(d, maxRetryBackoff)
}

func (r *run) nodeName() string {
	if r.node != nil {
		return r.node.Name
	}
	return r.Name()
}

// reached says whether the server is where the action takes it. A reboot
// is done once a call was taken and the server is on.
func reached(a hardwarev1.PowerAction, s machine.PowerState, taken bool) bool {
	switch a {
	case hardwarev1.PowerActionOff:
		return s == machine.PowerOff
	case hardwarev1.PowerActionOn:
		return s == machine.PowerOn
	}
	return taken && s == machine.PowerOn
}

// underway says whether the server is on its way where the action takes it.
func underway(a hardwarev1.PowerAction, s machine.PowerState) bool {
	return a == hardwarev1.PowerActionOff && s == machine.PowerPoweringOff || a == hardwarev1.PowerActionOn && s == machine.PowerPoweringOn
}

func verb(a hardwarev1.PowerAction) string {
	switch a {
	case hardwarev1.PowerActionOn:
		return "power-on"
	case hardwarev1.PowerActionOff:
		return "power-off"
	}
	return "reboot"
}

func powerTarget(a hardwarev1.PowerAction) string {
	if a == hardwarev1.PowerActionOff {
		return "off"
	}
	return "on"
}

func seen(observed string) string {
	if observed == "" {
		return "in no state yet"
	}
	return observed
}
