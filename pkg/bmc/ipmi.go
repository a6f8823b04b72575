package bmc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	ipmi "github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/chassis"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

type ipmiClient struct {
	ep Endpoint

	mu     sync.Mutex
	c      *ipmi.Client
	stale  bool // the last call failed mid-session: reconnect before the next
	closed bool
	// suite is the cipher suite of the session, tried first on a
	// reconnect.
	suite types.CipherSuiteID
	// inPass says the caller starts passes (NewPass); passStatus is the
	// chassis status read in the current one.
	inPass     bool
	passStatus *chassis.GetChassisStatusResponse
}

func dialIPMI(ctx context.Context, ep Endpoint) (*ipmiClient, error) {
	c := &ipmiClient{ep: ep}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// connect opens a session, one cipher suite at a time (the last one that
// worked first; see trySuites). A downgrade is reported as what it is.
func (c *ipmiClient) connect(ctx context.Context) error {
	cl, suite, downgrades, err := trySuites(c.suiteOrder(), func(s types.CipherSuiteID) (*ipmi.Client, string, error) {
		return c.connectSuite(ctx, s)
	})
	switch {
	case err == nil:
		c.c, c.stale, c.suite = cl, false, suite
		return nil
	case len(downgrades) > 0:
		return newError("Dial", c.ep, failure.ProtocolMismatch, fmt.Sprintf(
			"a cipher suite downgrade, refused: %s; something between the addon and the BMC rewrites the session setup, or the BMC does not honour the suite asked for",
			strings.Join(downgrades, "; ")), nil)
	}
	return c.fail(ctx, "Dial", err, false)
}

// trySuites runs attempt for each suite in order until one logs in. A
// refused password or a BMC that does not answer ends it: the next suite
// would fare no better, and a refused password counts against the account.
// A suite the BMC lacks, or one it answered with other algorithms (a
// downgrade, described by attempt), moves on. Without a session, it
// returns the downgrades when every attempt was one, else what failed.
func trySuites[S any](order []types.CipherSuiteID, attempt func(types.CipherSuiteID) (S, string, error)) (S, types.CipherSuiteID, []string, error) {
	var (
		zero       S
		errs       []error
		downgrades []string
	)
	for _, suite := range order {
		s, downgrade, err := attempt(suite)
		switch {
		case err == nil:
			return s, suite, nil, nil
		case downgrade != "":
			downgrades = append(downgrades, downgrade)
			errs = append(errs, err)
			continue
		}
		if _, ok := err.(*failure.Error); ok {
			return zero, 0, nil, err
		}
		errs = append(errs, err)
		if class, _ := classifyIPMI(err, false); class == failure.Unauthorized || class == failure.Unreachable {
			return zero, 0, nil, err
		}
	}
	if len(downgrades) < len(errs) {
		downgrades = nil
	}
	return zero, 0, downgrades, errors.Join(errs...)
}

// suiteOrder puts the suite of the last session first (this client's, else
// the one an earlier client's session had, from the endpoint's Memo); suite
// 0 (no security at all) is never offered, so it means none yet.
func (c *ipmiClient) suiteOrder() []types.CipherSuiteID {
	first := c.suite
	if first == types.CipherSuiteID0 {
		first = types.CipherSuiteID(c.ep.Memo.CipherSuite)
	}
	if !slices.Contains(cipherSuites, first) {
		return cipherSuites
	}
	order := []types.CipherSuiteID{first}
	for _, s := range cipherSuites {
		if s != first {
			order = append(order, s)
		}
	}
	return order
}

// connectSuite logs in with one cipher suite, through a suiteGuard. It
// returns the guard's description of a downgrade it refused.
func (c *ipmiClient) connectSuite(ctx context.Context, suite types.CipherSuiteID) (*ipmi.Client, string, error) {
	cl, err := ipmi.NewClient(c.ep.Host, c.ep.port(), c.ep.Username, string(c.ep.Password))
	if err != nil {
		return nil, "", newError("Dial", c.ep, failure.Invalid, err.Error(), err)
	}
	guard := &suiteGuard{}
	cl.WithCipherSuiteID(suite).WithUDPProxy(guard)
	c.reads(cl)
	if err := cl.Connect(ctx); err != nil {
		quickClose(cl) // stops the keep-alive and frees the socket
		return nil, guard.refused(), err
	}
	return cl, "", nil
}

// reads sets the transport for read commands: two tries of half the
// timeout each, so one lost datagram does not fail a poll.
func (c *ipmiClient) reads(cl *ipmi.Client) {
	cl.WithTimeout(c.ep.timeout() / 2).WithRetry(1)
}

// do runs fn under the client's lock, reconnecting first when the previous
// call broke the session (a BMC reboot, a timeout). A read that fails for
// want of an answer on a session opened before the call is asked once more
// on a new session: the BMC may have dropped the session (it rebooted, or
// expired it) and discards what comes in it. When nothing answers the new
// session's setup either, the BMC is unreachable, and says so: it stopped
// answering, which is not the slow answer of a BMC at work. A power
// command is not asked again: it may have run.
func (c *ipmiClient) do(ctx context.Context, op string, fn func(cl *ipmi.Client) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return closedError(op, c.ep)
	}
	fresh := c.c == nil || c.stale
	if fresh {
		if err := c.reconnect(ctx); err != nil {
			return err
		}
	}
	err := fn(c.c)
	if err != nil && !fresh && !isCommand(op) && ctx.Err() == nil && failure.ClassOf(c.fail(ctx, op, err, true)) == failure.Transient {
		rerr := c.reconnect(ctx)
		if rerr == nil {
			err = fn(c.c)
		} else if failure.ClassOf(rerr) == failure.Unreachable {
			// Without a session, the next call opens one.
			return rerr
		}
	}
	if err != nil {
		e := c.fail(ctx, op, err, true)
		if failure.ClassOf(e) == failure.Transient {
			c.stale = true
		}
		return e
	}
	return nil
}

// reconnect ends the session, briefly (a BMC that dropped it does not
// answer), and opens a new one; without one, c.c is nil.
// isCommand says whether op changes the host: never sent twice.
func isCommand(op string) bool { return op == "Power" || op == "BootOnce" }

func (c *ipmiClient) reconnect(ctx context.Context) error {
	if c.c != nil {
		c.c.WithTimeout(min(c.ep.timeout(), time.Second)).WithRetry(0)
		_ = c.c.Close(ctx)
		c.c = nil
	}
	return c.connect(ctx)
}

func (c *ipmiClient) fail(ctx context.Context, op string, err error, connected bool) error {
	var be *failure.Error
	if errors.As(err, &be) {
		return be
	}
	if class, msg, ok := ctxErr(ctx); ok {
		return newError(op, c.ep, class, msg, err)
	}
	class, msg := classifyIPMI(err, connected)
	if class == failure.Unreachable && !connected && answersTCP(c.ep) {
		class, msg = failure.ProtocolMismatch, fmt.Sprintf("port %d answers TCP, not IPMI over UDP (is it a Redfish/HTTPS port? then set the protocol to %q)", c.ep.port(), ProtocolRedfish)
	}
	return newError(op, c.ep, class, msg, err)
}

// classifyIPMI reads go-ipmi's errors. Its session setup joins the
// failures of every cipher suite into one text, so authentication failures
// are recognised by the messages of the IPMI specification.
func classifyIPMI(err error, connected bool) (failure.Class, string) {
	if class, msg, ok := classifyNet(err, connected); ok {
		if class == failure.Unreachable && strings.Contains(msg, "in time") {
			msg = "no answer over UDP in time: the BMC is down or stopped answering, a firewall drops IPMI, or the port is not an IPMI port"
		}
		return class, msg
	}
	text := err.Error()
	// go-ipmi waits for a matching answer until its deadline and then
	// reports that none came, which is no net.Error.
	if strings.Contains(text, "no datagram matched") || strings.Contains(text, "read deadline") || strings.Contains(text, "UDP read timed out") {
		if connected {
			return failure.Transient, "the BMC did not answer in time"
		}
		return failure.Unreachable, "no answer over UDP in time: the BMC is down or stopped answering, a firewall drops IPMI, or the port is not an IPMI port"
	}
	for _, s := range []string{"RAKP authentication failed", "Unauthorized name", "Invalid name length", "Unauthorized role", "Invalid integrity check value", "Insufficient privilege"} {
		if strings.Contains(text, s) {
			return failure.Unauthorized, "the BMC refused the user name or password (" + s + ")"
		}
	}
	if respErr, ok := types.IsResponseError(err); ok {
		switch respErr.CompletionCode() {
		case types.CodeInvalidCommand, types.CodeIllegalCommand, types.CodeNotSupported:
			return failure.Unsupported, rootCause(err)
		case types.CodeInsufficientPrivilege:
			return failure.Unauthorized, "the user lacks the privilege for this command"
		}
		return failure.Transient, rootCause(err)
	}
	if strings.Contains(text, "No Cipher Suite match") {
		return failure.Unsupported, "the BMC accepts neither cipher suite 17 nor 3"
	}
	if !connected && (strings.Contains(text, "too short") || strings.Contains(text, "unpack")) {
		return failure.ProtocolMismatch, "something answered on the port but not with IPMI 2.0 (RMCP+)"
	}
	return failure.Transient, rootCause(err)
}

// answersTCP says whether the IPMI port accepts TCP: a refused UDP port
// that is an open TCP port is most likely a Redfish endpoint.
func answersTCP(ep Endpoint) bool {
	conn, err := net.DialTimeout("tcp", ep.Address(), min(ep.timeout(), 2*time.Second))
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// answersRMCP says whether the port answers an RMCP presence ping, that is
// speaks IPMI over UDP.
func answersRMCP(ctx context.Context, ep Endpoint) bool {
	cl, err := ipmi.NewClient(ep.Host, ep.port(), "", "")
	if err != nil {
		return false
	}
	cl.WithTimeout(min(ep.timeout(), 2*time.Second)).WithRetry(0)
	defer quickClose(cl)
	pong, err := cl.RmcpPing(ctx)
	return err == nil && pong != nil
}

// quickClose frees a client that holds no session worth ending: go-ipmi's
// Close still sends Close Session, which need not wait for an answer.
func quickClose(cl *ipmi.Client) {
	cl.WithTimeout(100 * time.Millisecond).WithRetry(0)
	_ = cl.Close(context.Background())
}

// chassisStatus reads the chassis status, once per pass of a caller that
// starts passes (the health and the power read it a moment apart).
func (c *ipmiClient) chassisStatus(ctx context.Context, cl *ipmi.Client) (*chassis.GetChassisStatusResponse, error) {
	if c.passStatus != nil {
		return c.passStatus, nil
	}
	st, err := cl.GetChassisStatus(ctx)
	if err == nil && c.inPass {
		c.passStatus = st
	}
	return st, err
}

// NewPass starts a pass of the caller: the chassis status is read once in
// it, until a command changes it.
func (c *ipmiClient) NewPass() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inPass, c.passStatus = true, nil
}

func (c *ipmiClient) PowerState(ctx context.Context) (PowerState, error) {
	state := PowerUnknown
	err := c.do(ctx, "PowerState", func(cl *ipmi.Client) error {
		st, err := c.chassisStatus(ctx, cl)
		if err != nil {
			return err
		}
		state = PowerOff
		if st.PowerIsOn {
			state = PowerOn
		}
		return nil
	})
	return state, err
}

// Power sends one Chassis Control command with retries off: a
// retransmitted datagram is a second command to the BMC.
func (c *ipmiClient) Power(ctx context.Context, action PowerAction) error {
	if !action.valid() {
		return invalidAction("Power", c.ep, action)
	}
	control := map[PowerAction]chassis.ChassisControl{
		PowerActionOn:     chassis.ChassisControlPowerUp,
		PowerActionOff:    chassis.ChassisControlPowerDown,
		PowerActionReboot: chassis.ChassisControlPowerCycle,
	}[action]
	return c.do(ctx, "Power", func(cl *ipmi.Client) error {
		c.passStatus = nil
		cl.WithTimeout(c.ep.timeout()).WithRetry(0)
		defer c.reads(cl)
		_, err := cl.ChassisControl(ctx, control)
		return err
	})
}

// Memo is what the client learnt that makes a later session cheaper: the
// cipher suite the BMC took.
func (c *ipmiClient) Memo() Memo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Memo{CipherSuite: uint8(c.suite)}
}

func (c *ipmiClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.c == nil {
		return nil
	}
	// Close Session is sent once and waited for a second at most: some BMCs
	// (ipmi_sim among them) end the session without answering, and a BMC
	// that missed the request drops the session on its own timeout. The
	// socket is closed either way, so there is nothing to report.
	c.c.WithTimeout(min(c.ep.timeout(), time.Second)).WithRetry(0)
	_ = c.c.Close(context.Background())
	c.c = nil
	return nil
}
