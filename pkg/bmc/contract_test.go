package bmc

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// The driver contract: every behaviour the controller relies on, run
// against the Redfish responder and against OpenIPMI's ipmi_sim through
// Dial. Each case gets fresh BMCs.
var contract = []struct {
	name string
	run  func(t *testing.T, tg *target, other Endpoint)
}{
	{"inventory has what the BMC reports and nothing else", testInventory},
	{"health reads every subsystem and names a failing part", testHealth},
	{"log entries after a cursor come exactly once", testLogCursor},
	{"a cleared log is detected without replay or loss", testLogCleared},
	{"power off, on and reboot send one command each", testPower},
	{"a one-time network boot is one command and serves the next start only", testBootOnce},
	{"an address where nothing listens is Unreachable", testUnreachable},
	{"a wrong password is Unauthorized and never printed", testWrongPassword},
	{"the other protocol's port is a ProtocolMismatch", testWrongProtocol},
	{"a slow BMC works within the timeout and fails beyond", testSlow},
	{"an untrusted certificate is a TLS error; a CA bundle or the opt-out works", testTLS},
}

func TestContract(t *testing.T) {
	for _, tc := range contract {
		t.Run(tc.name, func(t *testing.T) {
			t.Run("redfish", func(t *testing.T) {
				rf, _, _ := redfishTarget(t)
				ip, _ := ipmiTarget(t)
				tc.run(t, rf, ip.ep)
			})
			t.Run("ipmi", func(t *testing.T) {
				ip, _ := ipmiTarget(t)
				rf, _, _ := redfishTarget(t)
				tc.run(t, ip, rf.ep)
			})
		})
	}
}

func dial(t *testing.T, ep Endpoint) Client {
	t.Helper()
	c, err := Dial(context.Background(), ep)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func testInventory(t *testing.T, tg *target, _ Endpoint) {
	inv, err := dial(t, tg.ep).Inventory(context.Background())
	require.NoError(t, err)
	assert.Equal(t, tg.inventory, inv)
}

func testHealth(t *testing.T, tg *target, _ Endpoint) {
	ctx := context.Background()
	c := dial(t, tg.ep)
	h, err := c.Health(ctx)
	require.NoError(t, err)
	assert.Equal(t, StateOK, h.Overall)
	require.Len(t, h.Subsystems, len(Subsystems))
	for i, s := range Subsystems {
		assert.Equal(t, s, h.Subsystems[i].Subsystem)
		assert.Equal(t, StateOK, h.Subsystems[i].State, "%s: %s", s, h.Subsystems[i].Message)
	}
	again, err := c.Health(ctx)
	require.NoError(t, err)
	assert.Equal(t, h, again, "an unchanged BMC must read the same twice, or every poll would be an Event")

	sub, part := tg.breakPart(t)
	h, err = c.Health(ctx)
	require.NoError(t, err)
	assert.Equal(t, StateCritical, h.Overall)
	assert.Equal(t, StateCritical, h.Get(sub).State)
	assert.Contains(t, h.Get(sub).Message, part)
	for _, s := range Subsystems {
		if s != sub {
			assert.Equal(t, StateOK, h.Get(s).State, s)
		}
	}
}

func ids(entries []LogEntry) []string {
	out := []string{}
	for _, e := range entries {
		out = append(out, e.ID)
	}
	return out
}

func testLogCursor(t *testing.T, tg *target, _ Endpoint) {
	ctx := context.Background()
	c := dial(t, tg.ep)
	before, cur, err := c.LogEntries(ctx, "")
	require.NoError(t, err)

	want := []string{tg.addLog(t, 1), tg.addLog(t, 2), tg.addLog(t, 3), tg.addLog(t, 4)}
	got, cur, err := c.LogEntries(ctx, cur)
	require.NoError(t, err)
	require.Len(t, got, 4, "new entries after %v", ids(before))
	for i, e := range got {
		assert.Contains(t, e.Message, want[i])
		assert.NotEmpty(t, e.ID)
		assert.NotEqual(t, StateUnknown, e.Severity)
	}
	// Polling an unchanged log, again and again, returns nothing.
	for range 3 {
		none, next, err := c.LogEntries(ctx, cur)
		require.NoError(t, err)
		assert.Empty(t, none)
		assert.Equal(t, cur, next)
	}
	// A restarted controller holding the cursor resumes where it was.
	require.NoError(t, c.Close())
	c = dial(t, tg.ep)
	none, cur, err := c.LogEntries(ctx, cur)
	require.NoError(t, err)
	assert.Empty(t, none)
	msg := tg.addLog(t, 5)
	got, _, err = c.LogEntries(ctx, cur)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Contains(t, got[0].Message, msg)

	all, _, err := c.LogEntries(ctx, "")
	require.NoError(t, err)
	assert.Len(t, all, len(before)+5, "from the beginning: everything, oldest first")

	_, _, err = c.LogEntries(ctx, "not-a-cursor")
	assert.Equal(t, failure.Invalid, failure.ClassOf(err), "%v", err)
}

func testLogCleared(t *testing.T, tg *target, _ Endpoint) {
	ctx := context.Background()
	c := dial(t, tg.ep)
	tg.addLog(t, 1)
	tg.addLog(t, 2)
	_, cur, err := c.LogEntries(ctx, "")
	require.NoError(t, err)

	tg.clearLog(t)
	// After the clear the BMC may reuse the IDs it handed out before.
	msg := tg.addLog(t, 3)
	got, cur, err := c.LogEntries(ctx, cur)
	require.NoError(t, err)
	require.NotEmpty(t, got, "the entry written after the clear is new")
	assert.Contains(t, got[len(got)-1].Message, msg)
	for _, e := range got {
		assert.NotContains(t, e.Message, " 1 on ", "an entry from before the clear came back")
	}
	none, _, err := c.LogEntries(ctx, cur)
	require.NoError(t, err)
	assert.Empty(t, none)
}

func testPower(t *testing.T, tg *target, _ Endpoint) {
	ctx := context.Background()
	c := dial(t, tg.ep)
	steps := []struct {
		action PowerAction
		want   PowerState
	}{{PowerActionOff, PowerOff}, {PowerActionOn, PowerOn}, {PowerActionOff, PowerOff}, {PowerActionReboot, PowerOn}}
	for i, s := range steps {
		require.NoError(t, c.Power(ctx, s.action), s.action)
		assert.Eventually(t, func() bool { return tg.commands() == i+1 }, 5*time.Second, 20*time.Millisecond, "%s: the BMC must get exactly one command", s.action)
		assert.Eventually(t, func() bool {
			st, err := c.PowerState(ctx)
			return err == nil && st == s.want && tg.poweredOn(t) == (s.want == PowerOn)
		}, 10*time.Second, 50*time.Millisecond, "%s ends %s", s.action, s.want)
		assert.Equal(t, i+1, tg.commands(), "%s: no second command", s.action)
	}
	err := c.Power(ctx, "hibernate")
	assert.Equal(t, failure.Invalid, failure.ClassOf(err))
	assert.Equal(t, len(steps), tg.commands())
}

func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

func testUnreachable(t *testing.T, tg *target, _ Endpoint) {
	ep := tg.ep
	ep.Port = closedPort(t)
	_, err := Dial(context.Background(), ep)
	assert.Equal(t, failure.Unreachable, failure.ClassOf(err), "%v", err)

	ep = tg.ep
	ep.Host = "bmc.invalid"
	_, err = Dial(context.Background(), ep)
	assert.Equal(t, failure.Unreachable, failure.ClassOf(err), "%v", err)
}

func testWrongPassword(t *testing.T, tg *target, _ Endpoint) {
	ep := tg.ep
	ep.Password = redact.Sensitive("x" + testPassword[1:])
	_, err := Dial(context.Background(), ep)
	require.Error(t, err)
	assert.Equal(t, failure.Unauthorized, failure.ClassOf(err), "%v", err)
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		for _, v := range []any{err, ep, &ep} {
			assert.NotContains(t, fmt.Sprintf(f, v), testPassword, f)
		}
	}
}

func testWrongProtocol(t *testing.T, tg *target, other Endpoint) {
	ep := tg.ep
	ep.Port = other.Port
	_, err := Dial(context.Background(), ep)
	assert.Equal(t, failure.ProtocolMismatch, failure.ClassOf(err), "%v", err)
}

func testSlow(t *testing.T, tg *target, _ Endpoint) {
	ctx := context.Background()
	ep := tg.slow(t, 300*time.Millisecond)
	ep.Timeout = 3 * time.Second
	c := dial(t, ep)
	_, err := c.PowerState(ctx)
	require.NoError(t, err, "300ms answers within a 3s timeout")

	ep = tg.slow(t, 0)
	ep.Timeout = time.Second
	c = dial(t, ep)
	tg.slow(t, 2*time.Second)
	_, err = c.PowerState(ctx)
	if tg.ep.Protocol == ProtocolIPMI {
		// Over UDP a BMC that answers no new session's setup in time
		// either is one that stopped answering.
		assert.Equal(t, failure.Unreachable, failure.ClassOf(err), "%v", err)
	} else {
		assert.Equal(t, failure.Transient, failure.ClassOf(err), "%v", err)
	}
	_, err = Dial(ctx, ep)
	assert.Contains(t, []failure.Class{failure.Unreachable, failure.Transient}, failure.ClassOf(err), "%v", err)
}

func testTLS(t *testing.T, tg *target, _ Endpoint) {
	if tg.ep.Protocol == ProtocolIPMI {
		t.Skip("IPMI has no TLS layer: RMCP+ authenticates and encrypts with the password")
	}
	ctx := context.Background()
	untrusted := tg.ep
	untrusted.CABundle = nil
	_, err := Dial(ctx, untrusted)
	require.Equal(t, failure.TLS, failure.ClassOf(err), "%v", err)
	assert.Contains(t, err.Error(), "CA bundle")
	assert.Contains(t, err.Error(), "insecureSkipVerify")

	c, err := Dial(ctx, tg.ep) // the BMC's CA in the bundle
	require.NoError(t, err)
	require.NoError(t, c.Close())

	insecure := untrusted
	insecure.InsecureSkipVerify = true
	c, err = Dial(ctx, insecure)
	require.NoError(t, err)
	require.NoError(t, c.Close())
}

func testBootOnce(t *testing.T, tg *target, _ Endpoint) {
	ctx := context.Background()
	c := dial(t, tg.ep)
	require.NoError(t, c.Power(ctx, PowerActionOff))
	require.Eventually(t, func() bool { st, err := c.PowerState(ctx); return err == nil && st == PowerOff }, 10*time.Second, 50*time.Millisecond)

	_, err := c.BootOnce(ctx, BootNetwork, BootFirmwareUEFI)
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return tg.bootCommands() == 1 }, 5*time.Second, 20*time.Millisecond, "one boot override request")
	assert.Equal(t, bmcsim.BootPxe, tg.bootOverride())
	require.NoError(t, c.Power(ctx, PowerActionOn))
	require.Eventually(t, func() bool { return len(startsOf(tg.transitions())) == 1 }, 10*time.Second, 20*time.Millisecond)
	assert.True(t, startsOf(tg.transitions())[0].NetworkBoot(), "%+v", tg.transitions())
	assert.Equal(t, bmcsim.BootNone, tg.bootOverride(), "the BMC used the override up")

	require.NoError(t, c.Power(ctx, PowerActionReboot))
	require.Eventually(t, func() bool { return len(startsOf(tg.transitions())) == 2 }, 10*time.Second, 20*time.Millisecond)
	assert.False(t, startsOf(tg.transitions())[1].NetworkBoot(), "the next start boots as before: %+v", tg.transitions())

	_, err = c.BootOnce(ctx, "cdrom", BootFirmwareAny)
	assert.Equal(t, failure.Invalid, failure.ClassOf(err), "%v", err)
	_, err = c.BootOnce(ctx, BootNetwork, "efi")
	assert.Equal(t, failure.Invalid, failure.ClassOf(err), "%v", err)
	assert.Equal(t, 1, tg.bootCommands(), "nothing invalid reaches the BMC")
}

// startsOf keeps the starts and restarts.
func startsOf(ts []bmcsim.PowerTransition) []bmcsim.PowerTransition {
	var out []bmcsim.PowerTransition
	for _, p := range ts {
		if p.Change != bmcsim.PowerChangeOff {
			out = append(out, p)
		}
	}
	return out
}
