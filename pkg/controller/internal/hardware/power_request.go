package hardware

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	hardwarev1 "github.com/harvester/harvester-equinix-addon/pkg/apis/hardware/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// syncRequestedPower carries out an operation a RequestedPower target asks
// for: exactly one command, sent only once the intent is stored. A command
// the machine refused ends the request at once, failed; one it took ends
// it once the server's power shows the effect (complete), or failed when
// it does not within requestEffectTimeout: what the one who asked sees as
// done is done (Harvester's UI shows a host whose shutdown is complete as
// Off). A request for a node that is not in Harvester maintenance mode
// ends at once, failed, with nothing sent: unlike a wanted state, an
// operation does not wait, because the one who asked expects an answer. A
// server without a node has no workload to harm and is switched at once.
func (r *run) syncRequestedPower(p RequestedPower) error {
	st := r.Hardware()
	if la := st.LastPowerAction; la.InFlight() {
		if la.Result == hardwarev1.PowerResultSent {
			return r.followRequest(p, la)
		}
		return r.endLostRequest(p, la)
	}
	if action, ok := p.PowerRequest(); ok {
		return r.carryOutRequest(p, action)
	}
	r.followEffect()
	return nil
}

func (r *run) carryOutRequest(p RequestedPower, action hardwarev1.PowerAction) error {
	// The node's maintenance mode is read from the API server before
	// anything of the request is recorded: a request ends at once either
	// way, so a cache lagging behind the node its requester just saw put
	// into maintenance mode must not refuse it (nor one still showing it
	// there let it through, nor a node missing from it be taken for none).
	// A failed read leaves the request as it was, for the next pass.
	allowed, why, err := r.maintenanceLive()
	if err != nil {
		return err
	}
	now := metav1.NewTime(r.now)
	la := &hardwarev1.PowerActionStatus{Action: action, Requested: now, Result: hardwarev1.PowerResultWaiting, ObservedGeneration: r.Generation()}
	r.Hardware().LastPowerAction = la
	p.PowerAccepted(action)
	if !allowed {
		msg := fmt.Sprintf("the %s requested at %s was not sent: %s, and a node's power is switched only in Harvester "+
			"maintenance mode (Enable Maintenance Mode on the host in the Harvester UI, then ask again)",
			verb(action), now.UTC().Format(time.RFC3339), why)
		r.end(la, hardwarev1.PowerResultFailed, msg)
		r.powerCondition(metav1.ConditionFalse, equinixv1.ReasonMaintenanceRequired, msg)
		p.PowerEnded(action, false)
		return nil
	}
	la.Result, la.Sent, la.Attempts = hardwarev1.PowerResultSending, &now, 1
	la.Message = fmt.Sprintf("sending the %s", verb(action))
	r.powerCondition(metav1.ConditionFalse, equinixv1.ReasonPowerActionSent, la.Message)
	if err := r.Persist(); err != nil {
		return err
	}
	err = r.machine.Power(r.s.ctx, machine.PowerAction(action))
	result, callResult, msg := requestOutcome(action, err)
	metrics.PowerCalls.WithLabelValues(string(action), callResult).Inc()
	r.poll()
	if result == hardwarev1.PowerResultSucceeded {
		// Taken: the request ends once the server's power shows it.
		return r.PersistRecord(func() { r.requestTaken(msg) })
	}
	metrics.PowerActions.WithLabelValues(string(action), string(result)).Inc()
	return r.PersistRecord(func() { r.closeRequest(p, result, msg) })
}

// requestEffectTimeout bounds how long a request the machine took may take
// to show in the server's power: a hard off or on shows within seconds,
// and a slow BMC's reading within a minute or two.
const requestEffectTimeout = 5 * time.Minute

// requestTaken records that the machine took the request's command, on the
// current working copy: it stays pending (no actionStatus) until the
// server's power shows it.
func (r *run) requestTaken(msg string) {
	la := r.Hardware().LastPowerAction
	if la == nil {
		return
	}
	la.Result = hardwarev1.PowerResultSent
	la.Message = fmt.Sprintf("%s; waiting for the server to be %s", msg, powerTarget(la.Action))
	r.powerCondition(metav1.ConditionFalse, equinixv1.ReasonPowerActionSent, la.Message)
}

// followRequest reads the power after a command the machine took: the
// request ends complete once the server is where the command takes it,
// failed once requestEffectTimeout passed without that.
func (r *run) followRequest(p RequestedPower, la *hardwarev1.PowerActionStatus) error {
	since := la.Requested.Time
	if la.Sent != nil {
		since = la.Sent.Time
	}
	state, err := r.machine.PowerState(r.s.ctx)
	if err == nil {
		r.Hardware().PowerState = string(state)
	}
	switch {
	case err == nil && reached(la.Action, state, true):
		metrics.PowerActions.WithLabelValues(string(la.Action), string(hardwarev1.PowerResultSucceeded)).Inc()
		r.closeRequest(p, hardwarev1.PowerResultSucceeded, fmt.Sprintf("the machine took the %s and the server is %s", verb(la.Action), state))
	case r.now.Sub(since) >= requestEffectTimeout:
		seenAs := "is " + string(state)
		if err != nil {
			seenAs = "could not be read: " + failure.Message(err)
		}
		metrics.PowerActions.WithLabelValues(string(la.Action), string(hardwarev1.PowerResultFailed)).Inc()
		r.closeRequest(p, hardwarev1.PowerResultFailed, fmt.Sprintf("the machine took the %s, but the server was not seen %s within %s (its power %s)",
			verb(la.Action), powerTarget(la.Action), requestEffectTimeout, seenAs))
	default:
		// A failed reading is the machine's to report; the request waits
		// for the next one.
		r.Requeue(min(r.PowerRecheck(r.s.settings.PollInterval), requestEffectTimeout-r.now.Sub(since)))
	}
	return nil
}

// requestOutcome is how a request ends after its one command: the result,
// the command's result for the metrics, and what to tell.
func requestOutcome(action hardwarev1.PowerAction, err error) (hardwarev1.PowerActionResult, string, string) {
	switch {
	case err == nil:
		msg := fmt.Sprintf("the machine took the %s", verb(action))
		if action == hardwarev1.PowerActionReboot {
			msg += " (a power cycle; the server boots from its disk, as before)"
		}
		return hardwarev1.PowerResultSucceeded, "accepted", msg
	case machine.MaybeApplied(err):
		return hardwarev1.PowerResultFailed, "unconfirmed", fmt.Sprintf("the answer to the %s was lost (%s): it may have been carried out, "+
			"so it is not sent again; look at the power state, and ask again if nothing changed", verb(action), failure.Message(err))
	}
	return hardwarev1.PowerResultFailed, "refused", fmt.Sprintf("the %s was not carried out: %s", verb(action), failure.Message(err))
}

// closeRequest ends the request in flight with result, on the current
// working copy (the outcome's write may be retried on a newer object).
func (r *run) closeRequest(p RequestedPower, result hardwarev1.PowerActionResult, msg string) {
	la := r.Hardware().LastPowerAction
	if la == nil {
		return
	}
	at := metav1.NewTime(r.now)
	la.Result, la.Completed, la.NotBefore, la.Message = result, &at, nil, msg
	full := fmt.Sprintf("the %s requested at %s ", verb(la.Action), la.Requested.UTC().Format(time.RFC3339))
	if result == hardwarev1.PowerResultSucceeded {
		r.powerCondition(metav1.ConditionTrue, equinixv1.ReasonPowerActionSucceeded, full+"is done: "+msg)
	} else {
		r.powerCondition(metav1.ConditionFalse, equinixv1.ReasonPowerActionFailed, full+"failed: "+msg)
	}
	p.PowerEnded(la.Action, result == hardwarev1.PowerResultSucceeded)
}

// endLostRequest ends a request whose command may have gone out before
// the process stopped, without its answer stored. It is never sent again:
// an on or off that shows in the server's power was carried out; anything
// else ends failed, saying so. A reading that fails leaves it for the next
// pass.
func (r *run) endLostRequest(p RequestedPower, la *hardwarev1.PowerActionStatus) error {
	state, err := r.machine.PowerState(r.s.ctx)
	if err != nil {
		// The machine's own failure is the target's to report; the
		// request waits for a reading.
		r.poll()
		return nil
	}
	r.Hardware().PowerState = string(state)
	sent := "(unknown)"
	if la.Sent != nil {
		sent = la.Sent.UTC().Format(time.RFC3339)
	}
	result, msg := hardwarev1.PowerResultFailed, fmt.Sprintf("the %s was sent at %s, but its answer was never stored (the controller stopped); "+
		"whether it was carried out is unknown, so it is not sent again: ask again if the server did not change", verb(la.Action), sent)
	if la.Action != hardwarev1.PowerActionReboot && reached(la.Action, state, false) {
		result, msg = hardwarev1.PowerResultSucceeded, fmt.Sprintf("the server is %s: the %s sent at %s was carried out", state, verb(la.Action), sent)
	}
	metrics.PowerActions.WithLabelValues(string(la.Action), string(result)).Inc()
	r.closeRequest(p, result, msg)
	return nil
}

// followEffect reads the server's power after a request the machine took,
// until the power shows it, at most powerTimeout after the request ended.
func (r *run) followEffect() {
	st := r.Hardware()
	if !PowerSettling(st, r.now) {
		return
	}
	state, err := r.machine.PowerState(r.s.ctx)
	if err != nil {
		return
	}
	st.PowerState = string(state)
	if !reached(st.LastPowerAction.Action, state, true) {
		r.poll()
	}
}

// PowerSettling reports whether the effect of a command the machine took
// is still awaited: a request pending until the server's power shows it
// (RequestedPower), or one that ended recently, the machine taking it,
// while the server's power was not yet seen where it takes it. Its power
// is read again at the power recheck pace meanwhile.
func PowerSettling(st *hardwarev1.HardwareStatus, now time.Time) bool {
	la := st.LastPowerAction
	if la != nil && la.Result == hardwarev1.PowerResultSent {
		return true
	}
	if la == nil || la.Result != hardwarev1.PowerResultSucceeded || la.Completed == nil || now.Sub(la.Completed.Time) > powerTimeout {
		return false
	}
	return !reached(la.Action, machine.PowerState(st.PowerState), true)
}
