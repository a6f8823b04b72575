package bmc

import (
	"context"
	"fmt"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

// Dial checks the endpoint, connects and logs in. A Redfish Dial reads the
// service root, opens a session (or falls back to HTTP basic auth when the
// BMC has no session service) and finds the computer system; an IPMI Dial
// opens an RMCP+ session. Errors are *Error values.
func Dial(ctx context.Context, ep Endpoint) (Client, error) {
	if err := ep.Validate(); err != nil {
		return nil, err
	}
	switch ep.Protocol {
	case ProtocolRedfish:
		return dialRedfish(ctx, ep)
	case ProtocolIPMI:
		return dialIPMI(ctx, ep)
	}
	return nil, fmt.Errorf("unreachable: protocol %q passed validation", ep.Protocol)
}

func closedError(op string, ep Endpoint) error {
	return newError(op, ep, failure.Invalid, "the client is closed; Dial again", nil)
}

func invalidAction(op string, ep Endpoint, a PowerAction) error {
	return newError(op, ep, failure.Invalid, fmt.Sprintf("unknown power action %q; use %q, %q or %q", string(a), PowerActionOn, PowerActionOff, PowerActionReboot), nil)
}

// worstOf folds subsystem readings into an overall state. Unknown
// subsystems are left out; with nothing known at all the result is Unknown.
func worstOf(base State, subs []SubsystemHealth) State {
	overall := base
	for _, s := range subs {
		switch {
		case s.State == StateUnknown:
		case overall == StateUnknown:
			overall = s.State
		default:
			overall = Worse(overall, s.State)
		}
	}
	return overall
}

// ctxErr reports a caller's cancellation as Transient so that it never
// reads as a BMC fault.
func ctxErr(ctx context.Context) (failure.Class, string, bool) {
	if ctx.Err() != nil {
		return failure.Transient, "the caller gave up: " + ctx.Err().Error(), true
	}
	return "", "", false
}
