package hardware

import (
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	hardwarev1 "github.com/harvester/harvester-equinix-addon/pkg/apis/hardware/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

const (
	// powerTimeout bounds how long a server may take to reach the state of
	// a power call the API took.
	powerTimeout = 15 * time.Minute
	// maxRetryBackoff caps the wait between refused power calls.
	maxRetryBackoff = 10 * time.Minute
	// maxUnconfirmed ends a request whose calls keep getting lost.
	maxUnconfirmed = 5
)

// syncPower carries the power request of the spec through: it follows a
// call under way, takes up a new request, and sends a waiting one once it
// may go.
func (r *run) syncPower(d DeclaredPower) error {
	if la := r.Hardware().LastPowerAction; la.InFlight() {
		return r.followPowerAction()
	}
	r.takeRequest(d.PowerSpec())
	if la := r.Hardware().LastPowerAction; la == nil || la.Result != hardwarev1.PowerResultWaiting {
		return nil
	}
	return r.carryOut()
}

// takeRequest turns the spec into a request: a newer rebootRequestedAt is
// one reboot; a powerState the server is not in is one on or off. A waiting
// request that the spec went back on is cancelled; one that failed is not
// repeated until the spec asks anew.
func (r *run) takeRequest(spec equinixv1.PowerSpec) {
	st := r.Hardware()
	desired := spec.WantedPowerState()
	now := metav1.NewTime(r.now)
	if rr := spec.RebootRequestedAt; rr != nil && (st.ObservedRebootRequest == nil || rr.After(st.ObservedRebootRequest.Time)) {
		st.ObservedRebootRequest = rr.DeepCopy()
		if la := st.LastPowerAction; la != nil && la.Result == hardwarev1.PowerResultWaiting {
			r.end(la, hardwarev1.PowerResultCancelled, "a reboot was asked for before it was sent")
		}
		st.LastPowerAction = &hardwarev1.PowerActionStatus{Action: hardwarev1.PowerActionReboot, Requested: *rr, Result: hardwarev1.PowerResultWaiting,
			Message: "a reboot was asked for (spec.rebootRequestedAt)", ObservedGeneration: r.Generation()}
		if desired == equinixv1.PowerOff {
			r.end(st.LastPowerAction, hardwarev1.PowerResultCancelled, "spec.powerState is off: a server switched off is not rebooted")
		}
		return
	}
	la := st.LastPowerAction
	if la != nil && la.Result == hardwarev1.PowerResultWaiting {
		if la.Action == hardwarev1.PowerActionReboot || string(la.Action) == string(desired) {
			return
		}
		r.end(la, hardwarev1.PowerResultCancelled, fmt.Sprintf("spec.powerState went back to %s before the %s was sent", desired, verb(la.Action)))
	}
	if la != nil && la.Result == hardwarev1.PowerResultFailed && string(la.Action) == string(desired) && la.ObservedGeneration == r.Generation() {
		// A failed request is not repeated by itself; a newer spec asks again.
		return
	}
	if needsPower(desired, st.PowerState) {
		st.LastPowerAction = &hardwarev1.PowerActionStatus{Action: hardwarev1.PowerAction(desired), Requested: now, Result: hardwarev1.PowerResultWaiting,
			Message:            fmt.Sprintf("spec.powerState is %s and the server was last seen %s", desired, seen(st.PowerState)),
			ObservedGeneration: r.Generation()}
	}
}

// needsPower says whether the server, last seen in observed, needs a call
// to be in desired. A server never seen is taken to be on, as it is made.
func needsPower(desired equinixv1.PowerState, observed string) bool {
	if desired == equinixv1.PowerOff {
		return observed != string(equinixv1.PowerOff)
	}
	return observed == string(equinixv1.PowerOff) || observed == hardwarev1.PowerPoweringOff
}

// carryOut sends a waiting request once it may go: not before a refused
// call's retry time, for a joined node only in maintenance mode, and only
// if the server is not there already. The intent is stored before the call.
func (r *run) carryOut() error {
	st := r.Hardware()
	la := st.LastPowerAction
	if la.NotBefore != nil && r.now.Before(la.NotBefore.Time) {
		r.Requeue(la.NotBefore.Sub(r.now))
		return nil
	}
	// A node that registered counts as joined even before the target
	// recorded the join.
	if r.Joined() || r.node != nil {
		ok, why, err := r.maintenanceConfirmed()
		if err != nil {
			return err
		}
		if !ok {
			msg := fmt.Sprintf("the %s waits: %s, and the power of a joined server is switched only in Harvester maintenance mode "+
				"(Enable Maintenance Mode on the host in the Harvester UI, or kubectl annotate node %s %s=true); nothing was sent",
				verb(la.Action), why, r.nodeName(), harvester.AnnotationDrainRequested)
			la.Message = msg
			r.powerCondition(metav1.ConditionFalse, equinixv1.ReasonMaintenanceRequired, msg)
			return nil
		}
	}
	state, err := r.machine.PowerState(r.s.ctx)
	if err != nil {
		return r.readFailed(la, err)
	}
	st.PowerState = string(state)
	action := la.Action
	switch {
	case reached(action, state, false):
		r.succeed(la, fmt.Sprintf("the server was %s already; nothing was sent", state))
		return nil
	case underway(action, state):
		la.Result = hardwarev1.PowerResultSent
		la.Message = fmt.Sprintf("the server is %s already; nothing was sent", state)
		r.poll()
		return nil
	case state != machine.PowerOn && state != machine.PowerOff:
		la.Message = fmt.Sprintf("waiting for the server to settle (it is %s) before the %s", state, verb(action))
		r.poll()
		return nil
	case action == hardwarev1.PowerActionReboot && state == machine.PowerOff:
		// A server that is off reboots by switching on.
		action = hardwarev1.PowerActionOn
	}
	now := metav1.NewTime(r.now)
	la.Result, la.Sent, la.NotBefore = hardwarev1.PowerResultSending, &now, nil
	la.Attempts++
	la.Message = fmt.Sprintf("sending the %s (call %d)", verb(action), la.Attempts)
	r.powerCondition(metav1.ConditionFalse, equinixv1.ReasonPowerActionSent, la.Message)
	if err := r.Persist(); err != nil {
		return err
	}
	err = r.machine.Power(r.s.ctx, machine.PowerAction(action))
	r.afterCall(r.Hardware().LastPowerAction, action, err)
	return nil
}

// afterCall records what came of a power call.
func (r *run) afterCall(la *hardwarev1.PowerActionStatus, action hardwarev1.PowerAction, err error) {
	switch {
	case err == nil:
		metrics.PowerCalls.WithLabelValues(string(action), "accepted").Inc()
		la.Result = hardwarev1.PowerResultSent
		la.Message = fmt.Sprintf("the %s was taken; waiting for the server to get there", verb(action))
		r.powerCondition(metav1.ConditionFalse, equinixv1.ReasonPowerActionSent, la.Message)
		r.poll()
	case machine.MaybeApplied(err):
		metrics.PowerCalls.WithLabelValues(string(action), "unconfirmed").Inc()
		la.Message = fmt.Sprintf("the answer to the %s was lost (%s); it may have been carried out, so it is not sent again "+
			"while it may still land: the server is watched until %s", verb(action), failure.Message(err),
			r.settleEnd(la).UTC().Format(time.RFC3339))
		r.powerCondition(metav1.ConditionFalse, equinixv1.ReasonPowerActionUnconfirmed, la.Message)
		r.poll()
	case failure.ClassOf(err) == failure.NotFound:
		metrics.PowerCalls.WithLabelValues(string(action), "refused").Inc()
		r.fail(la, fmt.Sprintf("the %s found no machine: %s", verb(action), failure.Message(err)))
	default:
		result := "refused"
		wait := failure.RetryAfter(err)
		if failure.ClassOf(err) == failure.Throttled {
			result = "throttled"
		}
		if wait <= 0 {
			wait = r.backoff(la.Attempts)
		}
		metrics.PowerCalls.WithLabelValues(string(action), result).Inc()
		next := metav1.NewTime(r.now.Add(wait))
		la.Result, la.NotBefore = hardwarev1.PowerResultWaiting, &next
		la.Message = fmt.Sprintf("the %s was refused (%s); nothing was carried out; it is sent again at %s",
			verb(action), failure.Message(err), next.UTC().Format(time.RFC3339))
		r.powerCondition(metav1.ConditionFalse, equinixv1.ReasonPowerActionRetrying, la.Message)
		r.Requeue(wait)
	}
}

// maintenanceConfirmed says whether the node may have its power switched.
// The cache can lag: a node taken out of maintenance mode a moment before
// a power request came in may still read as in maintenance there, and a
// power command cannot be taken back. So a command goes out only after the
// node, read from the API server itself, says so too: one read per
// command, none while a request waits.
func (r *run) maintenanceConfirmed() (bool, string, error) {
	if ok, why := harvester.PowerActionsAllowed(r.node); !ok || r.node == nil {
		return ok, why, nil
	}
	return r.maintenanceLive()
}

// maintenanceLive says whether the node, read from the API server, may
// have its power switched. With no node in the cache it reads the one the
// server's node would be (the target's name): a node that registered a
// moment ago has joined and is switched only in maintenance mode; none
// there means a server without a node, switched at once.
func (r *run) maintenanceLive() (bool, string, error) {
	name := r.nodeName()
	live, err := r.s.nodes.Get(name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && r.node == nil:
		return true, "", nil
	case apierrors.IsNotFound(err):
		return false, fmt.Sprintf("node %s was deleted a moment ago (ask again once the Inventory shows it gone)", name), nil
	case err != nil:
		return false, "", fmt.Errorf("reading node %s before a power command: %w", name, err)
	}
	ok, why := harvester.PowerActionsAllowed(live)
	return ok, why, nil
}
