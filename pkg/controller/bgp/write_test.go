package bgp

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// onePeer are the annotations of a device with one peer.
var onePeer = map[string]string{
	"metal.equinix.com/bgp-peers-0-node-asn": "65000",
	"metal.equinix.com/bgp-peers-0-peer-asn": "65530",
	"metal.equinix.com/bgp-peers-0-peer-ip":  "169.254.255.1",
	"metal.equinix.com/bgp-peers-0-src-ip":   "10.64.0.1",
	"metal.equinix.com/network-4-private":    "10.64.0.0/25",
}

func with(base map[string]string, extra map[string]string) map[string]string {
	out := maps.Clone(base)
	maps.Copy(out, extra)
	return out
}

// writeOutcome is the patch write sends (JSON, "" for none) and what it
// says.
type writeOutcome struct {
	Patch  string
	Events []string
}

func TestWrite(t *testing.T) {
	secondPeer := map[string]string{
		"metal.equinix.com/bgp-peers-1-node-asn": "65000",
		"metal.equinix.com/bgp-peers-1-peer-asn": "65530",
		"metal.equinix.com/bgp-peers-1-peer-ip":  "169.254.255.2",
		"metal.equinix.com/bgp-peers-1-src-ip":   "10.64.0.1",
	}
	cases := []struct {
		name     string
		current  map[string]string
		device   string
		expected writeOutcome
	}{
		{name: "a fresh node gets every key and the marker; other annotations are not in the patch",
			current: map[string]string{"example.com/keep": "x", "metal.equinix.com/bgp-peers-0-note": "a person's"}, device: "d1",
			expected: writeOutcome{
				Patch: `{"metadata":{"annotations":{"equinix.harvesterhci.io/bgp-device":"d1",` +
					`"metal.equinix.com/bgp-peers-0-node-asn":"65000","metal.equinix.com/bgp-peers-0-peer-asn":"65530",` +
					`"metal.equinix.com/bgp-peers-0-peer-ip":"169.254.255.1","metal.equinix.com/bgp-peers-0-src-ip":"10.64.0.1",` +
					`"metal.equinix.com/network-4-private":"10.64.0.0/25"}}}`,
				Events: []string{"Normal BGPPeersAnnotated node/web-1: BGP peering of device d1 written to the node's metal.equinix.com annotations (peers from 169.254.255.1)"}}},
		{name: "keys of a peer no longer there, and a password someone wrote, are removed; the rest is left as it is",
			current: with(onePeer, with(secondPeer, map[string]string{equinixv1.AnnotationBGPDevice: "d1",
				"metal.equinix.com/bgp-peers-0-bgp-pass": "c2VjcmV0", "example.com/keep": "x"})),
			device: "d1",
			expected: writeOutcome{
				Patch: `{"metadata":{"annotations":{"metal.equinix.com/bgp-peers-0-bgp-pass":null,` +
					`"metal.equinix.com/bgp-peers-1-node-asn":null,"metal.equinix.com/bgp-peers-1-peer-asn":null,` +
					`"metal.equinix.com/bgp-peers-1-peer-ip":null,"metal.equinix.com/bgp-peers-1-src-ip":null}}}`,
				Events: []string{}}},
		{name: "a node already in line is not patched",
			current: with(onePeer, map[string]string{equinixv1.AnnotationBGPDevice: "d1"}), device: "d1",
			expected: writeOutcome{Events: []string{}}},
		{name: "a node whose server was replaced gets the new device's values and marker",
			current: with(onePeer, map[string]string{equinixv1.AnnotationBGPDevice: "d0", "metal.equinix.com/bgp-peers-0-src-ip": "10.64.0.9"}), device: "d1",
			expected: writeOutcome{
				Patch:  `{"metadata":{"annotations":{"equinix.harvesterhci.io/bgp-device":"d1","metal.equinix.com/bgp-peers-0-src-ip":"10.64.0.1"}}}`,
				Events: []string{"Normal BGPPeersAnnotated node/web-1: BGP peering of device d1 written to the node's metal.equinix.com annotations (peers from 169.254.255.1)"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Annotations: maps.Clone(tc.current)}}
			nodes, events := &nodeController{nodes: map[string]*corev1.Node{"web-1": node.DeepCopy()}}, &eventLog{}
			h := &Handler{nodes: nodes, recorder: events}
			got, err := h.write(node, onePeer, tc.device)
			require.NoError(t, err)
			assert.Equal(t, nodes.nodes["web-1"], got, "write returns the node as stored")
			outcome := writeOutcome{Events: append([]string{}, events.events...)}
			if len(nodes.patches) > 0 {
				require.Len(t, nodes.patches, 1)
				outcome.Patch = nodes.patches[0]
			}
			assert.Equal(t, tc.expected, outcome)
		})
	}
}
