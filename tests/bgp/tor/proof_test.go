package tor_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/bgpannotate"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
	"github.com/harvester/harvester-equinix-addon/tests/bgp/tor"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// seam is the addon's Metal client on the env's simulator.
func (e *env) seam() metal.Client {
	e.t.Helper()
	p, err := metal.NewProvider(metal.Options{BaseURL: e.url, RequestsPerSecond: -1, Timeout: 10 * time.Second})
	require.NoError(e.t, err)
	c, err := p.Client(metal.Credentials{Token: token, ProjectID: project})
	require.NoError(e.t, err)
	return c
}

// annotate does what the controller will do for a node: open the device's
// session and compute its annotations from the neighbors and the device.
func annotate(t *testing.T, e *env, c metal.Client, deviceID string) map[string]string {
	t.Helper()
	require.NoError(t, c.CreateBGPSession(e.ctx, deviceID, metal.BGPSessionRequest{}))
	neighbors, err := c.ListBGPNeighbors(e.ctx, deviceID)
	require.NoError(t, err)
	dev, err := c.GetDevice(e.ctx, deviceID)
	require.NoError(t, err)
	network, err := bgpannotate.PrivateNetwork(dev)
	require.NoError(t, err)
	ann, err := bgpannotate.Annotations(neighbors, network)
	require.NoError(t, err)
	return ann
}

// speakerFromAnnotations configures a speaker from nothing but the node's
// annotations, as kube-vip --annotations metal.equinix.com does, plus the
// routers' port (kube-vip would use 179) and, for the test of a project
// password, a password, which these annotations never carry.
func speakerFromAnnotations(t *testing.T, e *env, ann map[string]string, password redact.Sensitive) *tor.Speaker {
	t.Helper()
	peers, err := bgpannotate.Peers(ann)
	require.NoError(t, err)
	cfg := tor.SpeakerConfig{LocalAS: peers[0].LocalAS, SourceIP: peers[0].SourceIP}
	for _, p := range peers {
		pass := p.Password
		if pass == "" {
			pass = password
		}
		cfg.Peers = append(cfg.Peers, tor.SpeakerPeer{Address: p.Address, AS: p.AS, Password: string(pass), Port: e.tor.Port()})
	}
	s, err := tor.StartSpeaker(e.ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func (e *env) sessionUp(c metal.Client, deviceID string) {
	e.t.Helper()
	require.Eventually(e.t, func() bool {
		sessions, err := c.ListBGPSessions(e.ctx, deviceID)
		return err == nil && len(sessions) == 1 && sessions[0].Status == "up"
	}, 20*time.Second, 20*time.Millisecond, "the API reports the session up; ToR error: %v", e.tor.Err())
}

// The proof: annotations built by the addon are enough for a speaker to
// peer with the routers and draw the VIP to its device.
func TestAnnotationsDrawTheVIPToTheAnnouncingDevice(t *testing.T) {
	e := newEnv(t)
	c := e.seam()
	vip := netip.MustParsePrefix("10.0.0.10/32")
	_, err := e.sim.AddIPReservation(project, metalsim.IPReservationSpec{CIDR: vip.String(), Metro: "da", Tags: []string{"harvester-vip"}})
	require.NoError(t, err)
	require.NoError(t, c.CreateBGPConfig(e.ctx, metal.BGPConfigRequest{ASN: 65000, DeploymentType: metal.BGPDeploymentLocal}))
	d1, d2 := e.device("node-1").GetId(), e.device("node-2").GetId()

	ann1 := annotate(t, e, c, d1)
	assert.Equal(t, "127.254.255.1", ann1["metal.equinix.com/bgp-peers-0-peer-ip"])
	assert.Equal(t, "127.254.255.2", ann1["metal.equinix.com/bgp-peers-1-peer-ip"])
	assert.Equal(t, "127.64.0.0/25", ann1[bgpannotate.KeyPrivateNetwork])

	s1 := speakerFromAnnotations(t, e, ann1, "")
	// Both speakers start before a session is up: GoBGP's StartBgp writes
	// package-level options a running server reads (a data race inside
	// GoBGP v3.37.0). s2 announces nothing until its turn.
	s2 := speakerFromAnnotations(t, e, annotate(t, e, c, d2), "")
	e.established(s1, 2)
	e.sessionUp(c, d1)

	require.NoError(t, s1.Announce(e.ctx, vip))
	e.routedTo(vip, d1)
	sessions, err := c.ListBGPSessions(e.ctx, d1)
	require.NoError(t, err)
	assert.Equal(t, []string{vip.String()}, sessions[0].LearnedRoutes)

	require.NoError(t, s1.Withdraw(e.ctx, vip))
	e.routedTo(vip, "")

	e.established(s2, 2)
	require.NoError(t, s2.Announce(e.ctx, vip))
	e.routedTo(vip, d2)

	// Back and forth with an overlap, as when kube-vip's leader changes.
	require.NoError(t, s1.Announce(e.ctx, vip))
	require.NoError(t, s2.Withdraw(e.ctx, vip))
	e.routedTo(vip, d1)
	require.NoError(t, s1.Close())
	e.routedTo(vip, "")
}

// With a project password, annotations alone do not get a session. kube-vip
// in annotation mode takes the password only from the bgp-pass annotation,
// which the addon never writes, and ignores its own password settings: such
// a project needs kube-vip run without --annotations, its peers and their
// password in its own configuration (tests/bgp/kubevip runs both).
// The speaker given the password here stands for that configuration.
func TestAProjectPasswordIsNotInTheAnnotations(t *testing.T) {
	e := newEnv(t)
	c := e.seam()
	require.NoError(t, c.CreateBGPConfig(e.ctx, metal.BGPConfigRequest{ASN: 65000, MD5: "Secret12345"}))
	d := e.device("node-1").GetId()
	ann := annotate(t, e, c, d)
	for k, v := range ann {
		assert.NotContains(t, k, "bgp-pass")
		assert.NotContains(t, v, "Secret12345")
	}
	require.True(t, e.tor.MD5Available())

	before := md5Drops(t, "TCPMD5NotFound")
	bare := speakerFromAnnotations(t, e, ann, "")
	require.Eventually(t, func() bool { return md5Drops(t, "TCPMD5NotFound") > before }, 20*time.Second, 20*time.Millisecond,
		"the routers drop the unsigned connection attempts")
	n, err := bare.Established(e.ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
	require.NoError(t, bare.Close())

	cfg, err := c.GetBGPConfig(e.ctx)
	require.NoError(t, err)
	withSecret := speakerFromAnnotations(t, e, ann, cfg.MD5)
	e.established(withSecret, 2)
	e.sessionUp(c, d)
}
