package node

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

func TestCCMAddresses(t *testing.T) {
	device := &metal.Device{IPAddresses: []metal.IPAddress{
		{Address: "147.75.0.1", AddressFamily: 4, Public: true, Management: true},
		{Address: "2604:1380::1", AddressFamily: 6, Public: true, Management: true},
		{Address: "10.64.0.1", AddressFamily: 4, Management: true},
		{Address: "10.99.0.5", AddressFamily: 4},
	}}
	addr := func(t corev1.NodeAddressType, a string) corev1.NodeAddress {
		return corev1.NodeAddress{Type: t, Address: a}
	}
	cases := []struct {
		name, provided string
		device         *metal.Device
		want           []corev1.NodeAddress
		err            string
	}{
		{name: "the device's private IPv4 addresses inside, its public outside, IPv6 left out", device: device,
			want: []corev1.NodeAddress{addr(corev1.NodeHostName, "web-1"), addr(corev1.NodeExternalIP, "147.75.0.1"),
				addr(corev1.NodeInternalIP, "10.64.0.1"), addr(corev1.NodeInternalIP, "10.99.0.5")}},
		{name: "the kubelet's --node-ip first, not twice: a private Elastic IP", device: device, provided: "10.99.0.5",
			want: []corev1.NodeAddress{addr(corev1.NodeHostName, "web-1"), addr(corev1.NodeInternalIP, "10.99.0.5"),
				addr(corev1.NodeExternalIP, "147.75.0.1"), addr(corev1.NodeInternalIP, "10.64.0.1")}},
		{name: "no private address", device: &metal.Device{IPAddresses: device.IPAddresses[:2]}, err: "the device has no private IPv4 address"},
		{name: "no public address", device: &metal.Device{IPAddresses: device.IPAddresses[2:]}, err: "the device has no public IPv4 address"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ccmAddresses("web-1", tc.device, tc.provided)
			if tc.err != "" {
				assert.EqualError(t, err, tc.err)
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
