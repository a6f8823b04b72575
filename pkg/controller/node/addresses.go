package node

import (
	"errors"
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// What a kubelet run with --cloud-provider=external leaves for a cloud
// controller: the taint that keeps pods off the Node until one initialized
// it, and the address it was given with --node-ip.
const (
	TaintUninitialized       = "node.cloudprovider.kubernetes.io/uninitialized"
	AnnotationProvidedNodeIP = "alpha.kubernetes.io/provided-node-ip"
)

// ccmAddresses are a node's addresses as the Equinix CCM sets them: its
// hostname; the address the kubelet was given with --node-ip, when it has
// one, first as InternalIP (a private Elastic IP assigned to the device,
// say); the device's private IPv4 addresses as InternalIP, that one not
// twice; its public IPv4 addresses as ExternalIP. Like the CCM, it refuses a
// device without a private or without a public IPv4 address.
func ccmAddresses(hostname string, dev *metal.Device, providedIP string) ([]corev1.NodeAddress, error) {
	out := []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: hostname}}
	provided, _ := netip.ParseAddr(providedIP)
	if provided.IsValid() {
		out = append(out, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: provided.String()})
	}
	var private, public bool
	for _, ip := range dev.IPAddresses {
		a, err := netip.ParseAddr(ip.Address)
		if err != nil || ip.AddressFamily != 4 {
			continue
		}
		if ip.Public {
			public = true
			out = append(out, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: a.String()})
			continue
		}
		private = true
		if a != provided {
			out = append(out, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a.String()})
		}
	}
	switch {
	case !private:
		return nil, errors.New("the device has no private IPv4 address")
	case !public:
		return nil, errors.New("the device has no public IPv4 address")
	}
	return out, nil
}
