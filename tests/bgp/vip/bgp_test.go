package vip

import (
	"net/netip"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/bgpannotate"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/bgp/tor"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// bgpKeys are the node's annotations under the CCM's prefix.
func bgpKeys(ann map[string]string) []string {
	var out []string
	for k := range ann {
		if strings.HasPrefix(k, bgpannotate.Prefix+"/") {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// With --bgp, every node with a server (the addon's and the first node)
// gets exactly the Equinix CCM's annotations once the project has BGP and
// the device a session; a speaker configured from nothing but one node's
// annotations (GoBGP, playing kube-vip --bgp --annotations
// metal.equinix.com) peers with the top-of-rack routers (GoBGP) and draws
// the VIP to its device. The annotations go when the session goes with its
// device; a session deleted on its own is opened again.
func TestBGPPeeringFromNodeAnnotations(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{Configure: func(c *config.Config) {
		c.BGP, c.BGPResync = true, 2*time.Second
	}})
	// The routers must be attached before any device gets its private address.
	routers, err := tor.Start(env.Ctx, env.Sim, tor.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = routers.Close() })
	w := newWorld(t, env, "bgp", 2)
	nodes := append([]string{w.first}, w.servers...)

	annotated := func(name string) map[string]string {
		ann := nodeNamed(t, w, name).Annotations
		if ann[equinixv1.AnnotationBGPDevice] == w.devices[name] {
			if _, err := bgpannotate.Peers(ann); err == nil {
				return ann
			}
		}
		return nil
	}
	for _, name := range nodes {
		env.Eventually(func() bool { return annotated(name) != nil }, time.Minute, "node %s has no BGP annotations", name)
		ann := annotated(name)
		dev, err := w.metal.GetDevice(env.Ctx, w.devices[name])
		require.NoError(t, err)
		assert.Equal(t, []string{
			"metal.equinix.com/bgp-peers-0-node-asn", "metal.equinix.com/bgp-peers-0-peer-asn",
			"metal.equinix.com/bgp-peers-0-peer-ip", "metal.equinix.com/bgp-peers-0-src-ip",
			"metal.equinix.com/bgp-peers-1-node-asn", "metal.equinix.com/bgp-peers-1-peer-asn",
			"metal.equinix.com/bgp-peers-1-peer-ip", "metal.equinix.com/bgp-peers-1-src-ip",
			"metal.equinix.com/network-4-private",
		}, bgpKeys(ann), "exactly the CCM's keys on node %s, no password", name)
		assert.Equal(t, "65000", ann["metal.equinix.com/bgp-peers-0-node-asn"])
		assert.Equal(t, "65530", ann["metal.equinix.com/bgp-peers-1-peer-asn"])
		assert.Equal(t, "127.254.255.1", ann["metal.equinix.com/bgp-peers-0-peer-ip"])
		assert.Equal(t, "127.254.255.2", ann["metal.equinix.com/bgp-peers-1-peer-ip"])
		assert.Equal(t, dev.PrivateIPv4(), ann["metal.equinix.com/bgp-peers-0-src-ip"])
		sessions, err := w.metal.ListBGPSessions(env.Ctx, w.devices[name])
		require.NoError(t, err)
		require.Len(t, sessions, 1, "one session per device")
		assert.Equal(t, "ipv4", sessions[0].AddressFamily)
		assert.True(t, env.EventRecorded(name, equinixv1.ReasonBGPPeersAnnotated))
	}
	cfg, err := w.metal.GetBGPConfig(env.Ctx)
	require.NoError(t, err)
	assert.True(t, cfg.Enabled())
	assert.Equal(t, int64(65000), cfg.ASN)
	assert.Equal(t, metal.BGPDeploymentLocal, cfg.DeploymentType)

	t.Run("a speaker configured only from the annotations draws the VIP", func(t *testing.T) {
		holder := w.servers[0]
		peers, err := bgpannotate.Peers(nodeNamed(t, w, holder).Annotations)
		require.NoError(t, err)
		spk := tor.SpeakerConfig{LocalAS: peers[0].LocalAS, SourceIP: peers[0].SourceIP}
		for _, p := range peers {
			// kube-vip dials port 179, which takes root to listen on,
			// and this test runs without: the routers' port is the one
			// thing not from the annotations.
			spk.Peers = append(spk.Peers, tor.SpeakerPeer{Address: p.Address, AS: p.AS, Password: string(p.Password), Port: routers.Port()})
		}
		speaker, err := tor.StartSpeaker(env.Ctx, spk)
		require.NoError(t, err)
		t.Cleanup(func() { _ = speaker.Close() })
		env.Eventually(func() bool { n, err := speaker.Established(env.Ctx); return err == nil && n == 2 }, time.Minute,
			"the speaker did not establish with both routers; ToR: %v", routers.Err())
		vip := netip.MustParsePrefix(framework.VIP + "/32")
		require.NoError(t, speaker.Announce(env.Ctx, vip))
		env.Eventually(func() bool {
			got, ok := env.Sim.RouteOf(vip)
			return ok && got == w.devices[holder]
		}, time.Minute, "the VIP is not routed to %s", holder)
		sessions, err := w.metal.ListBGPSessions(env.Ctx, w.devices[holder])
		require.NoError(t, err)
		assert.Equal(t, "up", sessions[0].Status)
		assert.Equal(t, []string{vip.String()}, sessions[0].LearnedRoutes)
	})

	t.Run("a session deleted on its own is opened again", func(t *testing.T) {
		dev := w.devices[w.servers[1]]
		sessions, err := w.metal.ListBGPSessions(env.Ctx, dev)
		require.NoError(t, err)
		require.NoError(t, w.metal.DeleteBGPSession(env.Ctx, sessions[0].ID))
		env.Eventually(func() bool {
			s, err := w.metal.ListBGPSessions(env.Ctx, dev)
			return err == nil && len(s) == 1 && s[0].ID != sessions[0].ID
		}, time.Minute, "the session was not opened again")
		assert.NotNil(t, annotated(w.servers[1]))
	})

	t.Run("the annotations go when the session goes with its device", func(t *testing.T) {
		require.NoError(t, env.Sim.DeleteDeviceOutOfBand(w.firstDevice))
		env.Eventually(func() bool {
			ann := nodeNamed(t, w, w.first).Annotations
			return len(bgpKeys(ann)) == 0 && ann[equinixv1.AnnotationBGPDevice] == ""
		}, time.Minute, "the first node keeps BGP annotations of a device that is gone")
		assert.True(t, env.EventRecorded(w.first, equinixv1.ReasonBGPPeersRemoved))
		for _, name := range w.servers {
			assert.NotNil(t, annotated(name), "node %s keeps its own", name)
		}
	})
	env.AssertNoSecretLeaks()
}
