package bmcdriver

import (
	"context"
	"net"
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

// closedPort is a loopback TCP port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// A connection that does not say its protocol: the candidates are tried
// in order while nothing answers, and the machine speaks, and says, the
// one that answered; its facts name it.
func TestMachineTriesTheNextCandidate(t *testing.T) {
	sim := ipmisim.Require(t, ipmisim.Options{Username: user, Password: password})
	ctx := context.Background()
	d := New(Options{})
	t.Cleanup(d.Close)
	redfish := bmc.Endpoint{Protocol: bmc.ProtocolRedfish, Host: "127.0.0.1", Port: closedPort(t), TrustOnFirstUse: true,
		Username: user, Password: password, Timeout: 2 * time.Second}
	ipmi := bmc.Endpoint{Protocol: bmc.ProtocolIPMI, Host: sim.Host, Port: sim.Port, Username: user, Password: password, Timeout: 2 * time.Second}
	m := d.Machine(redfish, MachineOptions{Owner: "o", Key: "k", Interval: time.Hour, Fallbacks: []bmc.Endpoint{ipmi}})
	f, err := m.Facts(ctx)
	require.NoError(t, err)
	assert.Contains(t, f.Source, "IPMI BMC at "+ipmi.Address())
	o := m.Observed()
	assert.True(t, o.Contacted)
	assert.NoError(t, o.Problem)
	assert.Equal(t, bmc.ProtocolIPMI, o.Endpoint.Protocol)
	assert.Equal(t, ipmi.Address(), o.Endpoint.Address())
	assert.Empty(t, o.Endpoint.Password, "an observation holds no credentials")
	m.Release(0)
}

// A candidate that answered ends the search, even to refuse: a refused
// password is not tried on the next protocol (another refused login), and
// a changed certificate is not gone around.
func TestMachineStopsAtACandidateThatAnswered(t *testing.T) {
	sim := bmcsim.New(bmcsim.Options{Username: user, Password: password})
	srv, err := bmcsim.NewServer(sim, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	dialed := 0
	d := New(Options{Dial: func(ctx context.Context, ep bmc.Endpoint) (bmc.Client, error) {
		dialed++
		return bmc.Dial(ctx, ep)
	}})
	t.Cleanup(d.Close)
	redfish := bmc.Endpoint{Protocol: bmc.ProtocolRedfish, Host: srv.Host, Port: srv.Port, CABundle: srv.CACertPEM,
		Username: user, Password: "wrong", Timeout: 2 * time.Second}
	ipmi := bmc.Endpoint{Protocol: bmc.ProtocolIPMI, Host: "127.0.0.1", Port: 9, Username: user, Password: "wrong", Timeout: 2 * time.Second}
	m := d.Machine(redfish, MachineOptions{Owner: "o", Key: "k", Interval: time.Hour, Fallbacks: []bmc.Endpoint{ipmi}})
	_, err = m.PowerState(context.Background())
	assert.Equal(t, failure.Unauthorized, failure.ClassOf(err), "%v", err)
	assert.Equal(t, 1, dialed)
	assert.Equal(t, bmc.ProtocolRedfish, m.Observed().Endpoint.Protocol, "the BMC that refused answered")
	m.Release(0)
}

// FreshPower reads the power without a session when the BMC allows it
// (one basic-auth request, the system known from an earlier session), on
// the session a pass left open when there is one; PowerDue says when the
// reading is old.
func TestFreshPowerAtTheLeastCost(t *testing.T) {
	sim := bmcsim.New(bmcsim.Options{Username: user, Password: password})
	srv, err := bmcsim.NewServer(sim, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	ep := bmc.Endpoint{Protocol: bmc.ProtocolRedfish, Host: srv.Host, Port: srv.Port, CABundle: srv.CACertPEM, Username: user, Password: password, Timeout: 2 * time.Second}
	ctx := context.Background()
	d := New(Options{IdleLogout: -1})
	t.Cleanup(d.Close)
	now := time.Unix(1_800_000_000, 0)
	pass := func() *Machine {
		return d.Machine(ep, MachineOptions{Owner: "o", Key: "k", Interval: time.Hour, LastPolled: now, Now: func() time.Time { return now }})
	}
	m := pass()
	due, _ := m.PowerDue(3 * time.Minute)
	assert.True(t, due, "never read")
	p, err := m.FreshPower(ctx)
	require.NoError(t, err)
	assert.Equal(t, machine.PowerOn, p)
	m.Release(0)
	assert.Equal(t, 1, sim.Logins().Accepted, "the first read learns the system in a session")
	due, left := pass().PowerDue(3 * time.Minute)
	assert.False(t, due)
	assert.Equal(t, 3*time.Minute, left)

	now = now.Add(3 * time.Minute)
	m = pass()
	due, _ = m.PowerDue(3 * time.Minute)
	require.True(t, due)
	n := len(sim.RequestLog())
	require.NoError(t, sim.SetPowerState("Off"))
	p, err = m.FreshPower(ctx)
	require.NoError(t, err)
	assert.Equal(t, machine.PowerOff, p)
	assert.Equal(t, []string{"GET /redfish/v1/Systems/1"}, sim.RequestLog()[n:], "one request, no login")
	assert.Equal(t, 1, sim.Logins().Accepted)
	o := m.Observed()
	assert.True(t, o.Contacted)
	assert.Equal(t, machine.PowerOff, o.Power)
	m.Release(0)
}
