package bmcdriver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
)

const (
	user     = "admin"
	password = "Drv-pw-not-shown-9"
)

// bmcUnderTest is a real BMC implementation with the test's hands on it.
type bmcUnderTest struct {
	ep       bmc.Endpoint
	addLog   func(t *testing.T, n int)
	breakPSU func(t *testing.T)
	commands func() int
}

func redfish(t *testing.T) bmcUnderTest {
	sim := bmcsim.New(bmcsim.Options{Username: user, Password: password})
	srv, err := bmcsim.NewServer(sim, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return bmcUnderTest{
		ep:     bmc.Endpoint{Protocol: bmc.ProtocolRedfish, Host: srv.Host, Port: srv.Port, CABundle: srv.CACertPEM, Username: user, Password: password, Timeout: 2 * time.Second},
		addLog: func(_ *testing.T, n int) { sim.AddLogEntry("Warning", "entry "+string(rune('0'+n))) },
		breakPSU: func(t *testing.T) {
			require.NoError(t, sim.SetHealth(bmcsim.PartPowerSupply, "PSU 2", bmcsim.HealthCritical))
		},
		commands: func() int { return len(sim.Resets()) },
	}
}

func ipmi(t *testing.T) bmcUnderTest {
	sim := ipmisim.Require(t, ipmisim.Options{Username: user, Password: password})
	return bmcUnderTest{
		ep: bmc.Endpoint{Protocol: bmc.ProtocolIPMI, Host: sim.Host, Port: sim.Port, Username: user, Password: password, Timeout: 2 * time.Second},
		addLog: func(t *testing.T, n int) {
			_, err := sim.AddSEL(0x0c, ipmisim.SensorDIMM, 0x6f, 0x00, byte(n), 0)
			require.NoError(t, err)
		},
		breakPSU: func(t *testing.T) { require.NoError(t, sim.SetSensorBit(ipmisim.SensorPSU, 1, true)) },
		commands: func() int { return len(sim.ChassisControls()) },
	}
}

// The same contract for both protocols: a poll hands each new event log
// entry and health change on once, a cursor taken from any event resumes
// without repeats, no BMC is read before the interval is over, and a
// power action is one command.
func TestMachineContract(t *testing.T) {
	for name, start := range map[string]func(*testing.T) bmcUnderTest{"redfish": redfish, "ipmi": ipmi} {
		t.Run(name, func(t *testing.T) {
			b := start(t)
			ctx := context.Background()
			d := New(Options{})
			t.Cleanup(d.Close)
			now := time.Unix(1_800_000_000, 0)
			clock := func() time.Time { return now }
			pass := func(last time.Time) *Machine {
				return d.Machine(b.ep, MachineOptions{Owner: "o", Key: "uid-1", Interval: time.Minute, LastPolled: last, Now: clock})
			}

			m := pass(time.Time{})
			first, err := m.Events(ctx, "")
			require.NoError(t, err)
			assert.Equal(t, time.Minute, first.RecheckAfter)
			cursor := ""
			if n := len(first.Events); n > 0 {
				cursor = first.Events[n-1].Cursor
			}
			facts, err := m.Facts(ctx)
			require.NoError(t, err)
			assert.NotEmpty(t, facts.Manufacturer)
			assert.Contains(t, facts.Source, "BMC at 127.0.0.1:")
			m.Release(0)
			assert.True(t, m.Observed().Contacted)
			polledAt := now

			// Not due: nothing is read, not even a login.
			now = now.Add(30 * time.Second)
			m = pass(polledAt)
			batch, err := m.Events(ctx, cursor)
			require.NoError(t, err)
			assert.Empty(t, batch.Events)
			assert.Equal(t, 30*time.Second, batch.RecheckAfter)
			_, err = m.Facts(ctx)
			require.NoError(t, err, "the facts are remembered between polls")
			assert.False(t, m.Observed().Contacted)

			b.addLog(t, 1)
			b.addLog(t, 2)
			b.breakPSU(t)
			now = now.Add(30 * time.Second)
			m = pass(polledAt)
			batch, err = m.Events(ctx, cursor)
			require.NoError(t, err)
			m.Release(0)
			var health, logs []machine.Event
			for _, e := range batch.Events {
				if e.Type == TypeHealth {
					health = append(health, e)
				} else {
					logs = append(logs, e)
				}
			}
			require.Len(t, health, 1, "one health change: %v", batch.Events)
			assert.Equal(t, machine.SeverityWarning, health[0].Severity)
			assert.Contains(t, health[0].Message, "PowerSupplies is Critical")
			require.GreaterOrEqual(t, len(logs), 2, "both entries (ipmi_sim logs the sensor event too)")
			assert.Equal(t, decodeLog(t, cursor, b.ep.Protocol), decodeLog(t, logs[0].Cursor, b.ep.Protocol),
				"an entry before the last keeps the log position the poll started from")

			// Resuming from the last cursor: nothing again; from the first
			// event's: the same IDs again, which the chain finds by name.
			last := batch.Events[len(batch.Events)-1].Cursor
			now = now.Add(time.Minute)
			again, err := pass(time.Time{}).Events(ctx, last)
			require.NoError(t, err)
			assert.Empty(t, again.Events)
			now = now.Add(time.Minute)
			replay, err := pass(time.Time{}).Events(ctx, batch.Events[0].Cursor)
			require.NoError(t, err)
			for _, e := range replay.Events {
				assert.Contains(t, ids(batch.Events), e.ID, "a replayed event keeps its ID")
			}

			m = pass(time.Time{})
			before := b.commands()
			require.NoError(t, m.Power(ctx, machine.ActionOff))
			assert.Equal(t, before+1, b.commands(), "one command")
			m.Release(0)
		})
	}
}

func decodeLog(t *testing.T, s string, p bmc.Protocol) string {
	c, err := decodeCursor(s, p)
	require.NoError(t, err)
	return c.Log
}

func ids(es []machine.Event) []string {
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

// A BMC that refuses the login: every call fails as Unauthorized, the
// login is tried once per pass, and a power action is known not to have
// been sent.
func TestMachineRefusedLogin(t *testing.T) {
	sim := bmcsim.New(bmcsim.Options{Username: user, Password: password})
	srv, err := bmcsim.NewServer(sim, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	ep := bmc.Endpoint{Protocol: bmc.ProtocolRedfish, Host: srv.Host, Port: srv.Port, CABundle: srv.CACertPEM, Username: user, Password: "wrong"}
	d := New(Options{})
	t.Cleanup(d.Close)
	m := d.Machine(ep, MachineOptions{Owner: "node-1", Key: "k", Interval: time.Minute})
	ctx := context.Background()
	_, err = m.Events(ctx, "")
	assert.Equal(t, failure.Unauthorized, failure.ClassOf(err))
	requests := sim.Requests()
	_, err = m.Facts(ctx)
	assert.Equal(t, failure.Unauthorized, failure.ClassOf(err))
	err = m.Power(ctx, machine.ActionReboot)
	assert.False(t, machine.MaybeApplied(err), "a power action whose login failed was not sent")
	assert.Equal(t, requests, sim.Requests(), "the failed login is not tried again within a pass")
	assert.Equal(t, failure.Unauthorized, failure.ClassOf(m.Observed().Problem))
	assert.NotContains(t, failure.Message(err), "wrong")
	assert.Empty(t, sim.Resets())

	// Held back until its retry time, the BMC sees no login, whatever
	// brings the owner back before: a poll, facts, a power request.
	m.Hold(time.Now().Add(time.Minute))
	m.Release(0)
	m = d.Machine(ep, MachineOptions{Owner: "node-1", Key: "k", Interval: time.Second})
	batch, err := m.Events(ctx, "")
	require.NoError(t, err)
	assert.Empty(t, batch.Events)
	assert.Greater(t, batch.RecheckAfter, 50*time.Second)
	_, err = m.Facts(ctx)
	assert.Equal(t, failure.Transient, failure.ClassOf(err))
	_, err = m.PowerState(ctx)
	assert.Equal(t, failure.Unauthorized, failure.ClassOf(err))
	err = m.Power(ctx, machine.ActionOn)
	assert.Equal(t, failure.Unauthorized, failure.ClassOf(err))
	assert.False(t, machine.MaybeApplied(err))
	assert.Equal(t, requests, sim.Requests(), "no login while held")
	assert.Nil(t, m.Observed().Problem, "a login held back is no news of the BMC")
	m.Release(0)

	// Other credentials (the Secret changed) are tried at once.
	ep.Password = password
	m = d.Machine(ep, MachineOptions{Owner: "node-1", Key: "k", Interval: time.Second})
	_, err = m.PowerState(ctx)
	require.NoError(t, err, "a change of the credentials lifts the hold")
	m.Hold(time.Time{})
	m.Release(0)
}

// A pass's poll hands its health and how the BMC answered to the chain;
// a BMC that is not there is tried and unreachable; forgetting the owner
// runs what the chain asked for.
func TestMachineHealthAndLink(t *testing.T) {
	b := redfish(t)
	b.breakPSU(t)
	ctx := context.Background()
	d := New(Options{})
	t.Cleanup(d.Close)
	now := time.Unix(1_800_000_000, 0)
	m := d.Machine(b.ep, MachineOptions{Owner: "o", Key: "uid-1", Interval: time.Minute, Now: func() time.Time { return now }})
	_, polled := m.PolledHealth()
	assert.False(t, polled)
	assert.Equal(t, machine.Link{}, m.Link(), "nothing tried yet")
	_, err := m.Events(ctx, "")
	require.NoError(t, err)
	h, polled := m.PolledHealth()
	require.True(t, polled)
	assert.Equal(t, now, h.At)
	require.Len(t, h.Subsystems, len(bmc.Subsystems))
	assert.Contains(t, h.Subsystems, machine.SubsystemHealth{Subsystem: "PowerSupplies", State: machine.HealthCritical, Message: "PSU 2: Critical"})
	assert.Equal(t, machine.Link{Tried: true, Reachable: true, Authenticated: true}, m.Link())
	last, interval := m.Schedule()
	assert.Equal(t, now, last)
	assert.Equal(t, time.Minute, interval)
	m.Release(0)

	gone := b.ep
	gone.Port = 1
	m = d.Machine(gone, MachineOptions{Owner: "p", Key: "uid-2", Interval: time.Minute, Now: func() time.Time { return now }})
	_, err = m.Events(ctx, "")
	require.Error(t, err)
	l := m.Link()
	assert.True(t, l.Tried)
	assert.False(t, l.Reachable)
	assert.False(t, l.Authenticated)
	assert.Equal(t, failure.Unreachable, failure.ClassOf(l.Problem))

	forgotten := 0
	m.OnForget(func() { forgotten++ })
	d.Forget("o")
	assert.Zero(t, forgotten, "another owner")
	d.Forget("p")
	d.Forget("p")
	assert.Equal(t, 1, forgotten)
}

// PollNow polls before the interval is over (a node just bound wants its
// health), and a pass after it keeps the schedule.
func TestPollNowPollsBeforeTheInterval(t *testing.T) {
	b := redfish(t)
	ctx := context.Background()
	d := New(Options{})
	t.Cleanup(d.Close)
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	pass := func(pollNow bool) *Machine {
		return d.Machine(b.ep, MachineOptions{Owner: "o", Key: "uid-1", Interval: time.Hour, PollNow: pollNow, Now: clock})
	}
	m := pass(false)
	_, err := m.Events(ctx, "")
	require.NoError(t, err)
	m.Release(0)

	now = now.Add(time.Minute)
	m = pass(false)
	_, err = m.Events(ctx, "")
	require.NoError(t, err)
	_, polled := m.PolledHealth()
	assert.False(t, polled, "not due")
	m.Release(0)

	m = pass(true)
	_, err = m.Events(ctx, "")
	require.NoError(t, err)
	h, polled := m.PolledHealth()
	assert.True(t, polled, "polled at once")
	assert.Equal(t, now, h.At)
	m.Release(0)
}
