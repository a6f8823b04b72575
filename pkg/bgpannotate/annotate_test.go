package bgpannotate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

func v4(customerIP string, peers ...string) metal.BGPNeighbor {
	return metal.BGPNeighbor{
		AddressFamily: 4, CustomerAS: 65000, CustomerIP: customerIP, PeerAS: 65530, PeerIPs: peers,
		MD5Enabled: true, MD5Password: "Secret12345", Multihop: true,
	}
}

func TestAnnotations(t *testing.T) {
	v6 := metal.BGPNeighbor{AddressFamily: 6, CustomerAS: 65000, CustomerIP: "2604:1380::1", PeerAS: 65530, PeerIPs: []string{"fc00::e", "fc00::f"}}
	tests := []struct {
		name      string
		neighbors []metal.BGPNeighbor
		network   string
		want      map[string]string
		wantErr   error
	}{
		{
			name:      "two peers, the CCM's keys",
			neighbors: []metal.BGPNeighbor{v4("10.70.1.3", "169.254.255.2", "169.254.255.1")},
			network:   "10.70.1.0/25",
			want: map[string]string{
				"metal.equinix.com/bgp-peers-0-node-asn": "65000",
				"metal.equinix.com/bgp-peers-0-peer-asn": "65530",
				"metal.equinix.com/bgp-peers-0-peer-ip":  "169.254.255.1",
				"metal.equinix.com/bgp-peers-0-src-ip":   "10.70.1.3",
				"metal.equinix.com/bgp-peers-1-node-asn": "65000",
				"metal.equinix.com/bgp-peers-1-peer-asn": "65530",
				"metal.equinix.com/bgp-peers-1-peer-ip":  "169.254.255.2",
				"metal.equinix.com/bgp-peers-1-src-ip":   "10.70.1.3",
				"metal.equinix.com/network-4-private":    "10.70.1.0/25",
			},
		},
		{
			name:      "the IPv4 neighbor among several; IPv6 ignored",
			neighbors: []metal.BGPNeighbor{v6, v4("10.70.1.5", "169.254.255.1")},
			network:   "10.70.1.0/25",
			want: map[string]string{
				"metal.equinix.com/bgp-peers-0-node-asn": "65000",
				"metal.equinix.com/bgp-peers-0-peer-asn": "65530",
				"metal.equinix.com/bgp-peers-0-peer-ip":  "169.254.255.1",
				"metal.equinix.com/bgp-peers-0-src-ip":   "10.70.1.5",
				"metal.equinix.com/network-4-private":    "10.70.1.0/25",
			},
		},
		{
			name:      "peers sorted as strings like the CCM; IPv6 peer IPs and repeats skipped",
			neighbors: []metal.BGPNeighbor{v4("127.64.0.1", "127.254.255.9", "fc00::e", "127.254.255.10", "127.254.255.9")},
			network:   "127.64.0.0/25",
			want: map[string]string{
				"metal.equinix.com/bgp-peers-0-node-asn": "65000",
				"metal.equinix.com/bgp-peers-0-peer-asn": "65530",
				"metal.equinix.com/bgp-peers-0-peer-ip":  "127.254.255.10",
				"metal.equinix.com/bgp-peers-0-src-ip":   "127.64.0.1",
				"metal.equinix.com/bgp-peers-1-node-asn": "65000",
				"metal.equinix.com/bgp-peers-1-peer-asn": "65530",
				"metal.equinix.com/bgp-peers-1-peer-ip":  "127.254.255.9",
				"metal.equinix.com/bgp-peers-1-src-ip":   "127.64.0.1",
				"metal.equinix.com/network-4-private":    "127.64.0.0/25",
			},
		},
		{name: "no neighbor", network: "10.70.1.0/25", wantErr: ErrNoIPv4Neighbor},
		{name: "only IPv6", neighbors: []metal.BGPNeighbor{v6}, network: "10.70.1.0/25", wantErr: ErrNoIPv4Neighbor},
		{name: "no peers", neighbors: []metal.BGPNeighbor{v4("10.70.1.3")}, network: "10.70.1.0/25", wantErr: ErrNoPeers},
		{name: "only IPv6 peers", neighbors: []metal.BGPNeighbor{v4("10.70.1.3", "fc00::e")}, network: "10.70.1.0/25", wantErr: ErrNoPeers},
		{name: "bad peer", neighbors: []metal.BGPNeighbor{v4("10.70.1.3", "router")}, network: "10.70.1.0/25", wantErr: ErrBadNeighbor},
		{name: "no customer IP", neighbors: []metal.BGPNeighbor{v4("", "169.254.255.1")}, network: "10.70.1.0/25", wantErr: ErrBadNeighbor},
		{name: "no network", neighbors: []metal.BGPNeighbor{v4("10.70.1.3", "169.254.255.1")}, wantErr: ErrNoPrivateNetwork},
		{name: "IPv6 network", neighbors: []metal.BGPNeighbor{v4("10.70.1.3", "169.254.255.1")}, network: "2604:1380::/56", wantErr: ErrNoPrivateNetwork},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Annotations(tt.neighbors, tt.network)
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			for k, v := range got {
				assert.NotContains(t, k, "bgp-pass", "the password stays out")
				assert.NotContains(t, v, "Secret12345")
				assert.NotContains(t, v, "U2VjcmV0MTIzNDU=", "not even in base64")
			}
		})
	}
}

func TestNoAsnOfZero(t *testing.T) {
	n := v4("10.70.1.3", "169.254.255.1")
	n.CustomerAS = 0
	_, err := Annotations([]metal.BGPNeighbor{n}, "10.70.1.0/25")
	assert.ErrorIs(t, err, ErrBadNeighbor)
}

func TestPrivateNetwork(t *testing.T) {
	d := &metal.Device{ID: "dev-1", IPAddresses: []metal.IPAddress{
		{Address: "147.75.1.3", AddressFamily: 4, Public: true, Management: true, ParentNetwork: "147.75.1.2/31"},
		{Address: "139.178.64.1", AddressFamily: 4, Public: true, ParentNetwork: "139.178.64.0/30"},
		{Address: "2604:1380::3", AddressFamily: 6, Public: true, Management: true, ParentNetwork: "2604:1380::/56"},
		{Address: "10.70.1.3", AddressFamily: 4, Management: true, ParentNetwork: "10.70.1.0/25"},
	}}
	got, err := PrivateNetwork(d)
	require.NoError(t, err)
	assert.Equal(t, "10.70.1.0/25", got)

	d.IPAddresses[3].ParentNetwork = ""
	_, err = PrivateNetwork(d)
	assert.ErrorIs(t, err, ErrNoPrivateNetwork)
	_, err = PrivateNetwork(&metal.Device{ID: "layer2"})
	assert.ErrorIs(t, err, ErrNoPrivateNetwork)
}

func TestRemoveAndStale(t *testing.T) {
	current := map[string]string{
		"metal.equinix.com/bgp-peers-0-node-asn":  "65000",
		"metal.equinix.com/bgp-peers-0-peer-ip":   "169.254.255.1",
		"metal.equinix.com/bgp-peers-1-peer-ip":   "169.254.255.2",
		"metal.equinix.com/bgp-peers-0-bgp-pass":  "c2VjcmV0",
		"metal.equinix.com/network-4-private":     "10.70.1.0/25",
		"metal.equinix.com/peer-ip":               "169.254.255.1",
		"metal.equinix.com/eip-metro":             "da",
		"metal.equinix.com/bgp-peers-0-node-asnx": "x",
		"kube-vip.io/vipHost":                     "node-1",
	}
	assert.Equal(t, map[string]string{
		"metal.equinix.com/eip-metro":             "da",
		"metal.equinix.com/bgp-peers-0-node-asnx": "x",
		"kube-vip.io/vipHost":                     "node-1",
	}, Remove(current))
	assert.Len(t, current, 9, "the input is left alone")

	desired := map[string]string{
		"metal.equinix.com/bgp-peers-0-node-asn": "65000",
		"metal.equinix.com/bgp-peers-0-peer-ip":  "169.254.255.1",
		"metal.equinix.com/network-4-private":    "10.70.1.0/25",
	}
	assert.Equal(t, []string{
		"metal.equinix.com/bgp-peers-0-bgp-pass",
		"metal.equinix.com/bgp-peers-1-peer-ip",
		"metal.equinix.com/peer-ip",
	}, Stale(current, desired))
	assert.Empty(t, Stale(desired, desired))
}
