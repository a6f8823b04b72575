package bgpannotate

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

func TestPeersReadWhatAnnotationsWrite(t *testing.T) {
	ann, err := Annotations([]metal.BGPNeighbor{v4("10.70.1.3", "169.254.255.2", "169.254.255.1")}, "10.70.1.0/25")
	require.NoError(t, err)
	peers, err := Peers(ann)
	require.NoError(t, err)
	src := netip.MustParseAddr("10.70.1.3")
	assert.Equal(t, []Peer{
		{Address: netip.MustParseAddr("169.254.255.1"), AS: 65530, LocalAS: 65000, SourceIP: src},
		{Address: netip.MustParseAddr("169.254.255.2"), AS: 65530, LocalAS: 65000, SourceIP: src},
	}, peers)
}

func TestPeers(t *testing.T) {
	base := func(extra map[string]string) map[string]string {
		out := map[string]string{
			"metal.equinix.com/bgp-peers-0-node-asn": "65000",
			"metal.equinix.com/bgp-peers-0-peer-asn": "65530",
			"metal.equinix.com/bgp-peers-0-src-ip":   "10.70.1.3",
			"metal.equinix.com/bgp-peers-0-peer-ip":  "169.254.255.1",
			"metal.equinix.com/bgp-peers-1-peer-ip":  "169.254.255.2",
		}
		for k, v := range extra {
			if v == "" {
				delete(out, k)
			} else {
				out[k] = v
			}
		}
		return out
	}
	addrs := func(ps []Peer) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Address.String())
		}
		return out
	}
	tests := []struct {
		name    string
		in      map[string]string
		check   func(t *testing.T, ps []Peer)
		wantErr string
	}{
		{name: "peer 0's values apply to every peer, peers in the order of n", in: base(map[string]string{
			"metal.equinix.com/bgp-peers-1-node-asn": "64999",
			"metal.equinix.com/bgp-peers-1-src-ip":   "10.9.9.9",
			"metal.equinix.com/bgp-peers-10-peer-ip": "169.254.255.3",
		}), check: func(t *testing.T, ps []Peer) {
			assert.Equal(t, []string{"169.254.255.1", "169.254.255.2", "169.254.255.3"}, addrs(ps))
			for _, p := range ps {
				assert.Equal(t, uint32(65000), p.LocalAS)
				assert.Equal(t, "10.70.1.3", p.SourceIP.String())
				assert.Empty(t, p.Password)
				assert.False(t, p.MultiHop)
			}
		}},
		{name: "a bgp-pass someone else wrote is decoded", in: base(map[string]string{
			"metal.equinix.com/bgp-peers-0-bgp-pass":       "U2VjcmV0MTIzNDU=",
			"metal.equinix.com/bgp-peers-0-peer-multi-hop": "true",
		}), check: func(t *testing.T, ps []Peer) {
			require.Len(t, ps, 2)
			for _, p := range ps {
				assert.Equal(t, redact.Sensitive("Secret12345"), p.Password)
				assert.True(t, p.MultiHop)
			}
			assert.NotContains(t, fmt.Sprintf("%+v", ps), "Secret12345", "a peer prints no password")
		}},
		{name: "the unnumbered keys of CCMs before v3.3", in: map[string]string{
			"metal.equinix.com/node-asn": "65000",
			"metal.equinix.com/peer-asn": "65530",
			"metal.equinix.com/src-ip":   "10.70.1.3",
			"metal.equinix.com/peer-ip":  "169.254.255.1,169.254.255.2",
		}, check: func(t *testing.T, ps []Peer) {
			assert.Equal(t, []string{"169.254.255.1", "169.254.255.2"}, addrs(ps))
		}},
		{name: "the numbered key wins over the unnumbered one", in: base(map[string]string{
			"metal.equinix.com/node-asn": "64512",
		}), check: func(t *testing.T, ps []Peer) {
			assert.Equal(t, uint32(65000), ps[0].LocalAS)
		}},
		{name: "other prefixes are not read", in: base(map[string]string{
			"example.com/bgp-peers-0-peer-ip":        "192.0.2.1",
			"metal.equinix.com/bgp-peers-0-peer-ipx": "192.0.2.2",
		}), check: func(t *testing.T, ps []Peer) {
			assert.Equal(t, []string{"169.254.255.1", "169.254.255.2"}, addrs(ps))
		}},
		{name: "node-asn missing", in: base(map[string]string{"metal.equinix.com/bgp-peers-0-node-asn": ""}), wantErr: "node-asn value missing"},
		{name: "only peer 1's node-asn", in: base(map[string]string{
			"metal.equinix.com/bgp-peers-0-node-asn": "", "metal.equinix.com/bgp-peers-1-node-asn": "65000",
		}), wantErr: "node-asn value missing"},
		{name: "src-ip missing", in: base(map[string]string{"metal.equinix.com/bgp-peers-0-src-ip": ""}), wantErr: "src-ip value missing"},
		{name: "peer-asn missing", in: base(map[string]string{"metal.equinix.com/bgp-peers-0-peer-asn": ""}), wantErr: "peer-asn value missing"},
		{name: "no peer-ip", in: base(map[string]string{
			"metal.equinix.com/bgp-peers-0-peer-ip": "", "metal.equinix.com/bgp-peers-1-peer-ip": "",
		}), wantErr: "peer-ip value missing"},
		{name: "AS beyond 32 bits", in: base(map[string]string{"metal.equinix.com/bgp-peers-0-node-asn": "4294967296"}), wantErr: "not an AS number"},
		{name: "bad source", in: base(map[string]string{"metal.equinix.com/bgp-peers-0-src-ip": "node-1"}), wantErr: "not an IP address"},
		{name: "bad password", in: base(map[string]string{"metal.equinix.com/bgp-peers-0-bgp-pass": "%%%"}), wantErr: "not base64"},
		{name: "bad multi-hop", in: base(map[string]string{"metal.equinix.com/bgp-peers-0-peer-multi-hop": "yes"}), wantErr: "must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := Peers(tt.in)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrIncomplete)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			tt.check(t, ps)
		})
	}
}
