package bmc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/bougou/go-ipmi/pkg/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
)

func TestIPMIUnknownUser(t *testing.T) {
	tg, _ := ipmiTarget(t)
	ep := tg.ep
	ep.Username = "nobody"
	_, err := Dial(context.Background(), ep)
	assert.Equal(t, failure.Unauthorized, failure.ClassOf(err), "%v", err)
}

// A BMC that stops answering on a session is unreachable, not slow: a new
// session's setup goes unanswered too. After it, the next call opens a new
// session instead of failing forever.
func TestIPMIRecoversAfterTimeout(t *testing.T) {
	tg, _ := ipmiTarget(t)
	ctx := context.Background()
	ep := tg.slow(t, 0)
	ep.Timeout = time.Second
	c := dial(t, ep)
	tg.slow(t, 2*time.Second)
	_, err := c.PowerState(ctx)
	require.Equal(t, failure.Unreachable, failure.ClassOf(err), "%v", err)
	tg.slow(t, 0)
	assert.Eventually(t, func() bool {
		st, err := c.PowerState(ctx)
		return err == nil && st == PowerOn
	}, 10*time.Second, 100*time.Millisecond)
}

func TestIPMIHealthOfEachSensorKind(t *testing.T) {
	tg, sim := ipmiTarget(t)
	ctx := context.Background()
	c := dial(t, tg.ep)
	require.NoError(t, sim.SetSensorValue(1, 0x58))  // CPU1 Temp 88: above non-critical 85
	require.NoError(t, sim.SetSensorValue(2, 0x08))  // FAN1 800 RPM: below critical 1000
	require.NoError(t, sim.SetSensorBit(4, 2, true)) // drive: predictive failure
	require.NoError(t, sim.SetSensorBit(5, 1, true)) // DIMM: uncorrectable ECC
	require.NoError(t, sim.SetSensorBit(6, 0, true)) // CPU: IERR
	h, err := c.Health(ctx)
	require.NoError(t, err)
	want := map[Subsystem]SubsystemHealth{
		SubsystemThermal:       {SubsystemThermal, StateWarning, "CPU1 Temp: Warning", 0},
		SubsystemFans:          {SubsystemFans, StateCritical, "FAN1: Critical", 0},
		SubsystemPowerSupplies: {SubsystemPowerSupplies, StateOK, "1 of 1 OK", 0},
		SubsystemStorage:       {SubsystemStorage, StateWarning, "Drive 0: Warning, failure predicted", 1},
		SubsystemMemory:        {SubsystemMemory, StateCritical, "DIMM A1: Critical", 0},
		SubsystemProcessors:    {SubsystemProcessors, StateCritical, "CPU1 Status: Critical", 0},
	}
	for _, s := range Subsystems {
		assert.Equal(t, want[s], h.Get(s))
	}
	assert.Equal(t, StateCritical, h.Overall)

	// The sensor events the BMC logged show up in the SEL too.
	entries, _, err := c.LogEntries(ctx, "")
	require.NoError(t, err)
	var critical int
	for _, e := range entries {
		if e.Severity == StateCritical {
			critical++
		}
	}
	assert.Positive(t, critical, "%+v", entries)
}

// A BMC that never answers over UDP is unreachable, not a BMC error: from
// outside, a silent port cannot be told from a host that is down.
func TestIPMISilentBMCIsUnreachable(t *testing.T) {
	silent, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Close() })
	ep := Endpoint{Protocol: ProtocolIPMI, Host: "127.0.0.1", Port: silent.LocalAddr().(*net.UDPAddr).Port,
		Username: testUser, Password: testPassword, Timeout: time.Second}
	_, err = Dial(context.Background(), ep)
	assert.Equal(t, failure.Unreachable, failure.ClassOf(err), "%v", err)
}

// Something between the addon and the BMC rewrites the suite asked for to
// suite 0 (no authentication, no integrity, no encryption): the BMC's
// answer names other algorithms than asked for, and that is refused as the
// downgrade it is, before a password is used, not taken for a wrong one.
func TestIPMIDowngradeIsRefused(t *testing.T) {
	tg, sim := ipmiTarget(t)
	relay := ipmisim.RequireRelay(t, sim)
	relay.RewriteSuite(types.CipherSuiteID17, types.CipherSuiteID0)
	relay.RewriteSuite(types.CipherSuiteID3, types.CipherSuiteID0)
	ep := tg.ep
	ep.Port = relay.Port()
	_, err := Dial(context.Background(), ep)
	require.Equal(t, failure.ProtocolMismatch, failure.ClassOf(err), "%v", err)
	assert.Contains(t, err.Error(), "downgrade")
	assert.NotContains(t, relay.SetupLog(), "rakp1", "no RAKP exchange after an answer with other algorithms")
}

// A BMC that answers a request for suite 17 with suite 3's algorithms (as
// pyghmi's does) is asked for suite 3 next, and the session runs with the
// suite both sides agreed on.
func TestIPMIAnswerWithAnotherSuite(t *testing.T) {
	tg, sim := ipmiTarget(t)
	relay := ipmisim.RequireRelay(t, sim)
	relay.RewriteSuite(types.CipherSuiteID17, types.CipherSuiteID3)
	ep := tg.ep
	ep.Port = relay.Port()
	c := dial(t, ep)
	_, err := c.PowerState(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"open 17", "answer 3", "open 3", "answer 3", "rakp1", "rakp3"}, relay.SetupLog())
}

// A SEL record whose event has no name in the IPMI tables still says what
// it is.
func TestIPMIUnnamedSELEvent(t *testing.T) {
	tg, sim := ipmiTarget(t)
	// A fan sensor with a sensor-specific offset: fans define none.
	_, err := sim.AddSEL(0x04, 0x05, 0x6f, 0x02, 0, 0)
	require.NoError(t, err)
	entries, _, err := dial(t, tg.ep).LogEntries(context.Background(), "")
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	last := entries[len(entries)-1]
	assert.NotContains(t, last.Message, ":  (", "an empty description")
	assert.Contains(t, last.Message, "offset 2")
}

// A refused password ends the login: the other suite would be refused too,
// and BMCs lock an account after a few refusals. So does a BMC that does
// not answer; a suite the BMC lacks or answers with other algorithms moves
// on. (ipmi_sim offers suite 3 only, so a real BMC cannot show the first
// case: the rule is checked on its own.)
func TestTrySuites(t *testing.T) {
	refused := errors.New("validate rakp2 message failed, err: RAKP2 authentication code mismatch: RAKP authentication failed")
	silent := errors.New("IPMI LAN: no UDP datagram matched before read deadline after 2 attempt(s)")
	lacking := errors.New("RMCP+ Open Session failed, err: unpack session setup response failed")
	for _, tc := range []struct {
		name       string
		outcomes   map[types.CipherSuiteID]error
		downgraded map[types.CipherSuiteID]bool
		tried      []types.CipherSuiteID
		suite      types.CipherSuiteID
		class      failure.Class
		downgrades int
	}{
		{name: "refused password", outcomes: map[types.CipherSuiteID]error{17: refused}, tried: []types.CipherSuiteID{17}, class: failure.Unauthorized},
		{name: "silent", outcomes: map[types.CipherSuiteID]error{17: silent}, tried: []types.CipherSuiteID{17}, class: failure.Unreachable},
		{name: "suite 17 lacking", outcomes: map[types.CipherSuiteID]error{17: lacking}, tried: []types.CipherSuiteID{17, 3}, suite: 3},
		{name: "17 downgraded", downgraded: map[types.CipherSuiteID]bool{17: true}, tried: []types.CipherSuiteID{17, 3}, suite: 3},
		{name: "both downgraded", downgraded: map[types.CipherSuiteID]bool{17: true, 3: true}, tried: []types.CipherSuiteID{17, 3}, downgrades: 2},
		{name: "17 downgraded, 3 refused", outcomes: map[types.CipherSuiteID]error{3: refused}, downgraded: map[types.CipherSuiteID]bool{17: true},
			tried: []types.CipherSuiteID{17, 3}, class: failure.Unauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tried []types.CipherSuiteID
			_, suite, downgrades, err := trySuites(cipherSuites, func(s types.CipherSuiteID) (string, string, error) {
				tried = append(tried, s)
				if tc.downgraded[s] {
					return "", "asked for cipher suite " + fmt.Sprint(s), errors.New("read from conn failed")
				}
				return "session", "", tc.outcomes[s]
			})
			assert.Equal(t, tc.tried, tried)
			assert.Len(t, downgrades, tc.downgrades)
			if tc.class == "" && tc.downgrades == 0 {
				require.NoError(t, err)
				assert.Equal(t, tc.suite, suite)
				return
			}
			require.Error(t, err)
			if tc.class != "" {
				class, _ := classifyIPMI(err, false)
				assert.Equal(t, tc.class, class)
			}
		})
	}
}

// A BMC that rebooted forgot the session: the next read opens a new one
// and is answered, rather than failing once first.
func TestIPMIReopensADroppedSession(t *testing.T) {
	dir := t.TempDir()
	sim := ipmisim.Require(t, ipmisim.Options{Username: testUser, Password: testPassword, Dir: dir})
	ep := Endpoint{Protocol: ProtocolIPMI, Host: sim.Host, Port: sim.Port, Username: testUser, Password: testPassword, Timeout: time.Second}
	c := dial(t, ep)
	ctx := context.Background()
	_, err := c.PowerState(ctx)
	require.NoError(t, err)
	require.NoError(t, sim.Stop())
	ipmisim.Require(t, ipmisim.Options{Username: testUser, Password: testPassword, Dir: dir, Port: sim.Port})
	st, err := c.PowerState(ctx)
	require.NoError(t, err, "the dropped session is reopened once")
	assert.Equal(t, PowerOn, st)
}
