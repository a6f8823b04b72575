package tor_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/tests/bgp/tor"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// speakerFor configures a speaker straight from the device's neighbor data.
func (e *env) speakerFor(deviceID, password string) *tor.Speaker {
	e.t.Helper()
	n, _, err := e.client.DevicesApi.GetBgpNeighborData(e.ctx, deviceID).Execute()
	require.NoError(e.t, err)
	require.Len(e.t, n.BgpNeighbors, 1)
	nb := n.BgpNeighbors[0]
	cfg := tor.SpeakerConfig{LocalAS: uint32(nb.GetCustomerAs()), SourceIP: netip.MustParseAddr(nb.GetCustomerIp())}
	for _, ip := range nb.PeerIps {
		cfg.Peers = append(cfg.Peers, tor.SpeakerPeer{
			Address: netip.MustParseAddr(ip), AS: uint32(nb.GetPeerAs()), Password: password, Port: e.tor.Port(),
		})
	}
	s, err := tor.StartSpeaker(e.ctx, cfg)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestRoutersFollowTheSimulator(t *testing.T) {
	e := newEnv(t)
	vip := netip.MustParsePrefix("10.0.0.10/32")
	_, err := e.sim.AddIPReservation(project, metalsim.IPReservationSpec{CIDR: vip.String(), Metro: "da"})
	require.NoError(t, err)
	e.enableBGP("")
	d := e.device("node-1")
	s := e.session(d.GetId())

	n, _, err := e.client.DevicesApi.GetBgpNeighborData(e.ctx, d.GetId()).Execute()
	require.NoError(t, err)
	nb := n.BgpNeighbors[0]
	assert.Equal(t, []string{"127.254.255.1", "127.254.255.2"}, nb.PeerIps)
	assert.True(t, tor.DefaultPrivatePool.Contains(netip.MustParseAddr(nb.GetCustomerIp())), "a loopback address a speaker can bind")
	assert.Equal(t, nb.GetCustomerIp(), d.IpAddresses[2].GetAddress(), "the device's private IPv4")
	require.Eventually(t, func() bool { st, _ := e.sessionStatus(s.GetId()); return st == "down" }, 20*time.Second, 20*time.Millisecond,
		"the routers know the session before the speaker connects")

	sp := e.speakerFor(d.GetId(), "")
	e.established(sp, 2)
	require.Eventually(t, func() bool { st, _ := e.sessionStatus(s.GetId()); return st == "up" }, 20*time.Second, 20*time.Millisecond)

	foreign := netip.MustParsePrefix("192.0.2.7/32")
	require.NoError(t, sp.Announce(e.ctx, foreign))
	require.NoError(t, sp.Announce(e.ctx, vip))
	e.routedTo(vip, d.GetId())
	_, routed := e.tor.RouteOf(foreign)
	assert.False(t, routed, "announcements outside the project's reservations are filtered")
	_, learned := e.sessionStatus(s.GetId())
	assert.Equal(t, []string{vip.String()}, learned)

	require.NoError(t, sp.Withdraw(e.ctx, vip))
	e.routedTo(vip, "")

	t.Run("a reservation added later is accepted from routes already sent", func(t *testing.T) {
		_, err := e.sim.AddIPReservation(project, metalsim.IPReservationSpec{CIDR: "192.0.2.0/29", Metro: "da"})
		require.NoError(t, err)
		e.routedTo(foreign, d.GetId())
	})

	t.Run("the session goes with its device", func(t *testing.T) {
		require.NoError(t, e.sim.DeleteDeviceOutOfBand(d.GetId()))
		e.established(sp, 0)
		e.routedTo(foreign, "")
	})
}

func TestRoutersCheckTheSessionParameters(t *testing.T) {
	e := newEnv(t)
	e.enableBGP("Secret12345")
	d := e.device("node-1")
	e.session(d.GetId())
	vip := netip.MustParsePrefix("10.0.0.10/32")
	_, err := e.sim.AddIPReservation(project, metalsim.IPReservationSpec{CIDR: vip.String(), Metro: "da"})
	require.NoError(t, err)

	require.True(t, e.tor.MD5Available())
	before := md5Drops(t, "TCPMD5Failure")
	wrong := e.speakerFor(d.GetId(), "Wrong123456")
	require.Eventually(t, func() bool { return md5Drops(t, "TCPMD5Failure") > before }, 20*time.Second, 20*time.Millisecond,
		"the routers refuse the segments signed with the wrong password")
	n, err := wrong.Established(e.ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "a wrong MD5 password gets no session")
	require.NoError(t, wrong.Close())
	// Every GoBGP server of the test starts before the first session is
	// up: StartBgp writes GoBGP's package-level route selection options,
	// which a running server reads as it takes a session's routes (a data
	// race inside GoBGP v3.37.0 the race detector reports).
	other := e.device("node-2")
	stranger, err := tor.StartSpeaker(e.ctx, tor.SpeakerConfig{LocalAS: 65000, SourceIP: netip.MustParseAddr(other.IpAddresses[2].GetAddress()),
		Peers: []tor.SpeakerPeer{{Address: tor.DefaultRouterIPs[0], AS: tor.MetalPeerAS, Port: e.tor.Port()}}})
	require.NoError(t, err)
	defer stranger.Close()
	right := e.speakerFor(d.GetId(), "Secret12345")
	e.established(right, 2)

	t.Run("a device without a session is not accepted", func(t *testing.T) {
		require.NoError(t, stranger.Announce(e.ctx, vip))
		require.Eventually(t, func() bool { n, err := stranger.OpensSent(e.ctx); return err == nil && n >= 1 }, 20*time.Second, 20*time.Millisecond,
			"the router takes the connection and hangs up")
		n, err := stranger.Established(e.ctx)
		require.NoError(t, err)
		assert.Zero(t, n)
		_, routed := e.tor.RouteOf(vip)
		assert.False(t, routed)
	})
}
