package bmcdriver

import (
	"context"
	"fmt"
	"strings"
	"sync"
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

// sessionBMC is a real BMC with the test's view of its sessions.
type sessionBMC struct {
	ep bmc.Endpoint
	// logins counts the logins the BMC saw, most the sessions in use at
	// once, open the sessions it holds now (-1 when it cannot tell).
	logins, most, open func() int
	// refuseAll makes the BMC refuse every request, the login included.
	refuseAll func()
}

func redfishSessions(t *testing.T) sessionBMC {
	// One session at most, as the BMCs that refuse a second one.
	sim := bmcsim.New(bmcsim.Options{Username: user, Password: password, MaxSessions: 1})
	srv, err := bmcsim.NewServer(sim, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return sessionBMC{
		ep:        bmc.Endpoint{Protocol: bmc.ProtocolRedfish, Host: srv.Host, Port: srv.Port, CABundle: srv.CACertPEM, Username: user, Password: password, Timeout: 2 * time.Second},
		logins:    func() int { return sim.Logins().Accepted },
		most:      func() int { return sim.Logins().MostSessions },
		open:      sim.Sessions,
		refuseAll: func() { sim.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultUnauthorized}) },
	}
}

func ipmiSessions(t *testing.T) sessionBMC {
	sim := ipmisim.Require(t, ipmisim.Options{Username: user, Password: password})
	relay := ipmisim.RequireRelay(t, sim)
	return sessionBMC{
		ep: bmc.Endpoint{Protocol: bmc.ProtocolIPMI, Host: "127.0.0.1", Port: relay.Port(), Username: user, Password: password, Timeout: 2 * time.Second},
		logins: func() int {
			n := 0
			for _, m := range relay.SetupLog() {
				if m == "rakp3" {
					n++
				}
			}
			return n
		},
		most: relay.MostSessions,
		open: func() int { return -1 },
	}
}

// One session per BMC: a poll and a power action followed over many
// passes log in once, passes of two owners of one BMC at once share it,
// and it is logged out once the work is done.
func TestOneSessionPerBMC(t *testing.T) {
	for name, start := range map[string]func(*testing.T) sessionBMC{"redfish": redfishSessions, "ipmi": ipmiSessions} {
		t.Run(name, func(t *testing.T) {
			b := start(t)
			ctx := context.Background()
			d := New(Options{})
			t.Cleanup(d.Close)
			pass := func(owner string) *Machine {
				return d.Machine(b.ep, MachineOptions{Owner: owner, Key: owner, Interval: time.Minute})
			}
			m := pass("a")
			_, err := m.Events(ctx, "")
			require.NoError(t, err)
			_, err = m.Facts(ctx)
			require.NoError(t, err)
			require.NoError(t, m.Power(ctx, machine.ActionOn))
			m.Release(10 * time.Second)
			for range 5 {
				m = pass("a")
				_, err := m.PowerState(ctx)
				require.NoError(t, err)
				m.Release(10 * time.Second)
			}
			assert.Equal(t, 1, b.logins(), "a poll and the rechecks of a power action: one login")

			var wg sync.WaitGroup
			for i := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					m := pass(fmt.Sprint("owner-", i%2))
					_, err := m.PowerState(ctx)
					assert.NoError(t, err)
					m.Release(10 * time.Second)
				}()
			}
			wg.Wait()
			assert.Equal(t, 1, b.logins(), "passes of two owners at once share the session")

			m = pass("a")
			_, err = m.PowerState(ctx)
			require.NoError(t, err)
			m.Release(15 * time.Minute)
			assert.Zero(t, d.OpenSessions(), "the next pass is a poll interval away: logged out")
			if n := b.open(); n >= 0 {
				assert.Zero(t, n, "the BMC holds no session")
			}
			assert.Equal(t, 1, b.most(), "never two sessions at once")
		})
	}
}

// A session nobody uses is logged out after the idle time.
func TestIdleSessionIsLoggedOut(t *testing.T) {
	b := redfishSessions(t)
	d := New(Options{IdleLogout: 100 * time.Millisecond})
	t.Cleanup(d.Close)
	m := d.Machine(b.ep, MachineOptions{Owner: "a", Key: "a", Interval: time.Minute})
	_, err := m.PowerState(context.Background())
	require.NoError(t, err)
	m.Release(50 * time.Millisecond)
	assert.Eventually(t, func() bool { return b.open() == 0 && d.OpenSessions() == 0 }, 5*time.Second, 20*time.Millisecond)
}

// A kept session the BMC refuses (the account was changed) is logged out,
// and the pass fails once rather than at every call.
func TestRefusedSessionIsDropped(t *testing.T) {
	b := redfishSessions(t)
	ctx := context.Background()
	d := New(Options{})
	t.Cleanup(d.Close)
	m := d.Machine(b.ep, MachineOptions{Owner: "a", Key: "a", Interval: time.Minute})
	_, err := m.PowerState(ctx)
	require.NoError(t, err)
	m.Release(10 * time.Second)
	b.refuseAll()
	m = d.Machine(b.ep, MachineOptions{Owner: "a", Key: "a", Interval: time.Minute})
	_, err = m.PowerState(ctx)
	assert.Equal(t, failure.Unauthorized, failure.ClassOf(err))
	assert.Zero(t, d.OpenSessions())
	_, err = m.PowerState(ctx)
	assert.Equal(t, failure.Unauthorized, failure.ClassOf(err))
	assert.True(t, strings.Contains(failure.Message(err), "refused"), failure.Message(err))
	m.Release(10 * time.Second)
}

// A pass that starts from a status older than this process's last poll
// (the cache has not caught up with the write yet) does not poll again.
func TestNoSecondPollFromAnOlderStatus(t *testing.T) {
	b := redfishSessions(t)
	ctx := context.Background()
	d := New(Options{})
	t.Cleanup(d.Close)
	now := time.Unix(1_800_000_000, 0)
	pass := func() *Machine {
		return d.Machine(b.ep, MachineOptions{Owner: "a", Key: "a", Interval: time.Second, Now: func() time.Time { return now }})
	}
	m := pass()
	_, err := m.Events(ctx, "")
	require.NoError(t, err)
	require.False(t, m.Observed().Polled.IsZero())
	m.Release(time.Second)
	now = now.Add(90 * time.Millisecond)
	m = pass() // LastPolled zero: the copy of the status from before the write
	batch, err := m.Events(ctx, "")
	require.NoError(t, err)
	assert.Empty(t, batch.Events)
	assert.Equal(t, 910*time.Millisecond, batch.RecheckAfter)
	assert.True(t, m.Observed().Polled.IsZero(), "no second poll")
	m.Release(time.Second)
}

// While a power action is under way, its checks read the BMC at most once
// per pace, whatever brings the owner back in between; a command sent
// makes the next check read the BMC.
func TestPowerChecksArePaced(t *testing.T) {
	sim := bmcsim.New(bmcsim.Options{Username: user, Password: password})
	srv, err := bmcsim.NewServer(sim, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	ep := bmc.Endpoint{Protocol: bmc.ProtocolRedfish, Host: srv.Host, Port: srv.Port, CABundle: srv.CACertPEM, Username: user, Password: password}
	reads := func() int {
		n := 0
		for _, r := range sim.RequestLog() {
			if r == "GET /redfish/v1/Systems/1" {
				n++
			}
		}
		return n
	}
	ctx := context.Background()
	d := New(Options{})
	t.Cleanup(d.Close)
	now := time.Unix(1_800_000_000, 0)
	pass := func() *Machine {
		return d.Machine(ep, MachineOptions{Owner: "a", Key: "a", Interval: time.Hour, LastPolled: now,
			PowerPace: 10 * time.Second, Now: func() time.Time { return now }})
	}
	m := pass()
	_, err = m.PowerState(ctx)
	require.NoError(t, err)
	m.Release(10 * time.Second)
	before := reads()
	for range 3 {
		now = now.Add(2 * time.Second)
		m = pass()
		st, err := m.PowerState(ctx)
		require.NoError(t, err)
		assert.Equal(t, machine.PowerOn, st)
		m.Release(10 * time.Second)
	}
	assert.Equal(t, before, reads(), "passes within the pace take the last reading")
	now = now.Add(4 * time.Second)
	m = pass()
	_, err = m.PowerState(ctx)
	require.NoError(t, err)
	assert.Equal(t, before+1, reads(), "once the pace is over, the BMC is read")
	require.NoError(t, m.Power(ctx, machine.ActionOff))
	st, err := m.PowerState(ctx)
	require.NoError(t, err)
	assert.Equal(t, machine.PowerOff, st, "after a command, the next check reads the BMC")
	m.Release(0)
}
