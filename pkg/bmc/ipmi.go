package bmc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	ipmi "github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/chassis"
	"github.com/bougou/go-ipmi/pkg/types"
)

// Cipher suites offered, best first: 17 (HMAC-SHA256, AES-128) and 3
// (HMAC-SHA1, AES-128), which every IPMI 2.0 BMC has. Offering two, not the
// library's whole list, keeps a wrong password to two failed logins: BMCs
// lock accounts after a few.
var cipherSuites = []types.CipherSuiteID{types.CipherSuiteID17, types.CipherSuiteID3}

type ipmiClient struct {
	ep Endpoint

	mu     sync.Mutex
	c      *ipmi.Client
	stale  bool // the last call failed mid-session: reconnect before the next
	closed bool
}

func dialIPMI(ctx context.Context, ep Endpoint) (*ipmiClient, error) {
	c := &ipmiClient{ep: ep}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *ipmiClient) connect(ctx context.Context) error {
	cl, err := ipmi.NewClient(c.ep.Host, c.ep.port(), c.ep.Username, string(c.ep.Password))
	if err != nil {
		return newError("Dial", c.ep, Invalid, err.Error(), err)
	}
	cl.WithCipherSuiteID(cipherSuites...)
	c.reads(cl)
	if err := cl.Connect(ctx); err != nil {
		quickClose(cl) // stops the keep-alive and frees the socket
		return c.fail(ctx, "Dial", err, false)
	}
	c.c, c.stale = cl, false
	return nil
}

// reads sets the transport for read commands: two tries of half the
// timeout each, so one lost datagram does not fail a poll.
func (c *ipmiClient) reads(cl *ipmi.Client) {
	cl.WithTimeout(c.ep.timeout() / 2).WithRetry(1)
}

// do runs fn under the client's lock, reconnecting first when the previous
// call broke the session (a BMC reboot, a timeout).
func (c *ipmiClient) do(ctx context.Context, op string, fn func(cl *ipmi.Client) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return closedError(op, c.ep)
	}
	if c.stale {
		c.c.WithTimeout(min(c.ep.timeout(), time.Second)).WithRetry(0)
		_ = c.c.Close(ctx)
		if err := c.connect(ctx); err != nil {
			return err
		}
	}
	if err := fn(c.c); err != nil {
		e := c.fail(ctx, op, err, true)
		if ClassOf(e) == Transient {
			c.stale = true
		}
		return e
	}
	return nil
}

func (c *ipmiClient) fail(ctx context.Context, op string, err error, connected bool) error {
	var be *Error
	if errors.As(err, &be) {
		return be
	}
	if class, msg, ok := ctxErr(ctx); ok {
		return newError(op, c.ep, class, msg, err)
	}
	class, msg := classifyIPMI(err, connected)
	if class == Unreachable && !connected && answersTCP(c.ep) {
		class, msg = ProtocolMismatch, fmt.Sprintf("port %d answers TCP, not IPMI over UDP (is it a Redfish/HTTPS port? then set the protocol to %q)", c.ep.port(), ProtocolRedfish)
	}
	return newError(op, c.ep, class, msg, err)
}

// classifyIPMI reads go-ipmi's errors. Its session setup joins the
// failures of every cipher suite into one text, so authentication failures
// are recognised by the messages of the IPMI specification.
func classifyIPMI(err error, connected bool) (Class, string) {
	if class, msg, ok := classifyNet(err, connected); ok {
		if class == Unreachable && strings.Contains(msg, "in time") {
			msg = "no answer over UDP in time: the host is down, a firewall drops IPMI, or the port is not an IPMI port"
		}
		return class, msg
	}
	text := err.Error()
	for _, s := range []string{"RAKP authentication failed", "Unauthorized name", "Invalid name length", "Unauthorized role", "Invalid integrity check value", "Insufficient privilege"} {
		if strings.Contains(text, s) {
			return Unauthorized, "the BMC refused the user name or password (" + s + ")"
		}
	}
	if respErr, ok := types.IsResponseError(err); ok {
		switch respErr.CompletionCode() {
		case types.CodeInvalidCommand, types.CodeIllegalCommand, types.CodeNotSupported:
			return Unsupported, rootCause(err)
		case types.CodeInsufficientPrivilege:
			return Unauthorized, "the user lacks the privilege for this command"
		}
		return Transient, rootCause(err)
	}
	if strings.Contains(text, "No Cipher Suite match") {
		return Unsupported, "the BMC accepts neither cipher suite 17 nor 3"
	}
	if !connected && (strings.Contains(text, "too short") || strings.Contains(text, "unpack")) {
		return ProtocolMismatch, "something answered on the port but not with IPMI 2.0 (RMCP+)"
	}
	return Transient, rootCause(err)
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

func (c *ipmiClient) PowerState(ctx context.Context) (PowerState, error) {
	state := PowerUnknown
	err := c.do(ctx, "PowerState", func(cl *ipmi.Client) error {
		st, err := cl.GetChassisStatus(ctx)
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
		cl.WithTimeout(c.ep.timeout()).WithRetry(0)
		defer c.reads(cl)
		_, err := cl.ChassisControl(ctx, control)
		return err
	})
}

func (c *ipmiClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	// Close Session is sent once and waited for a second at most: some BMCs
	// (ipmi_sim among them) end the session without answering, and a BMC
	// that missed the request drops the session on its own timeout. The
	// socket is closed either way, so there is nothing to report.
	c.c.WithTimeout(min(c.ep.timeout(), time.Second)).WithRetry(0)
	_ = c.c.Close(context.Background())
	return nil
}
