package bmc

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/stmcginnis/gofish/schemas"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

// Memo is what a connection to a BMC learnt that makes the next one
// cheaper. The caller keeps it, in memory, per BMC, and hands it back in
// Endpoint.Memo; it is no secret and no promise: a Memo that no longer
// holds costs a full login, nothing else.
type Memo struct {
	// SystemPath is the server's computer system resource (Redfish).
	SystemPath string
	// SessionsOnly says the BMC refused basic auth that a session then
	// took (Redfish): power reads log in with a session.
	SessionsOnly bool
	// CipherSuite is the IPMI cipher suite of the last session; 0 before
	// one (suite 0, no security at all, is never offered).
	CipherSuite uint8
}

// Memoizer is a Client that tells what it learnt (Memo).
type Memoizer interface {
	Memo() Memo
}

// PassStarter is a Client that keeps what it read for a moment, so that a
// caller's pass that asks twice is answered once; NewPass starts a pass
// that reads anew.
type PassStarter interface {
	NewPass()
}

// ReadPowerState reads whether the host is powered, at the least cost to
// the BMC: a Redfish BMC whose system ep.Memo knows is asked with one
// request in basic auth, no session opened (a BMC that refuses basic auth
// but takes a session is asked through a session from then on, as the
// returned Memo says); an IPMI BMC, and a Redfish one whose system is not
// known yet, through a session opened for the read and closed after it.
// It returns what it learnt for the next read.
func ReadPowerState(ctx context.Context, ep Endpoint) (PowerState, Memo, error) {
	if err := ep.Validate(); err != nil {
		return PowerUnknown, ep.Memo, err
	}
	memo := ep.Memo
	if ep.Protocol == ProtocolRedfish && memo.SystemPath != "" && !memo.SessionsOnly {
		state, err := readRedfishPowerBasic(ctx, ep)
		if !isBasicRefused(err) {
			return state, memo, err
		}
		state, learnt, err := readPowerInSession(ctx, ep)
		if err == nil {
			learnt.SessionsOnly = true
		}
		return state, learnt, err
	}
	return readPowerInSession(ctx, ep)
}

// readPowerInSession logs in, reads the power and logs out.
func readPowerInSession(ctx context.Context, ep Endpoint) (PowerState, Memo, error) {
	c, err := Dial(ctx, ep)
	if err != nil {
		return PowerUnknown, ep.Memo, err
	}
	defer c.Close()
	state, err := c.PowerState(ctx)
	memo := ep.Memo
	if m, ok := c.(Memoizer); ok {
		learnt := m.Memo()
		memo.SystemPath = learnt.SystemPath
		if learnt.CipherSuite != 0 {
			memo.CipherSuite = learnt.CipherSuite
		}
	}
	return state, memo, err
}

// basicRefused marks a Redfish read refused in basic auth, which a session
// may still be allowed.
type basicRefused struct{ code int }

func (e basicRefused) Error() string { return http.StatusText(e.code) }

func isBasicRefused(err error) bool {
	var br basicRefused
	return errors.As(err, &br)
}

// readRedfishPowerBasic reads the system's PowerState with one GET in basic
// auth.
func readRedfishPowerBasic(ctx context.Context, ep Endpoint) (PowerState, error) {
	c := newRedfishClient(ep)
	defer c.http.CloseIdleConnections()
	c.rt.useBasic(ep.Username, string(ep.Password))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+ep.Address()+ep.Memo.SystemPath, nil)
	if err != nil {
		return PowerUnknown, newError("PowerState", ep, failure.Invalid, err.Error(), err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return PowerUnknown, c.fail(ctx, "PowerState", err, stageSession)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return PowerUnknown, newError("PowerState", ep, failure.Unauthorized, "the BMC refused basic auth", basicRefused{resp.StatusCode})
	case resp.StatusCode != http.StatusOK:
		class, msg := classifyStatus(&schemas.Error{HTTPReturnedStatusCode: resp.StatusCode}, stageSession)
		return PowerUnknown, newError("PowerState", ep, class, msg, nil)
	}
	var sys struct{ PowerState string }
	if err := json.NewDecoder(resp.Body).Decode(&sys); err != nil {
		return PowerUnknown, newError("PowerState", ep, failure.Transient, "the BMC sent a malformed answer: "+err.Error(), err)
	}
	return redfishPowerState(sys.PowerState), nil
}
