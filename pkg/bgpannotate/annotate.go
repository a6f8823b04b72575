package bgpannotate

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"sort"
	"strconv"

	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// Prefix is the annotation prefix the Equinix CCM writes and kube-vip's
// --annotations flag names.
const Prefix = "metal.equinix.com"

// Annotation keys. The peer keys are patterns: bgp-peers-{n}-<info>.
const (
	KeyPrivateNetwork = Prefix + "/network-4-private"
	infoNodeASN       = "node-asn"
	infoPeerASN       = "peer-asn"
	infoPeerIP        = "peer-ip"
	infoSourceIP      = "src-ip"
	infoPassword      = "bgp-pass"
	infoMultiHop      = "peer-multi-hop"
)

// PeerKey returns the key of one data point of peer n, such as
// metal.equinix.com/bgp-peers-0-node-asn.
func PeerKey(n int, info string) string {
	return Prefix + "/bgp-peers-" + strconv.Itoa(n) + "-" + info
}

// Errors of Annotations and PrivateNetwork.
var (
	ErrNoIPv4Neighbor   = errors.New("the device has no IPv4 BGP neighbor")
	ErrNoPeers          = errors.New("the IPv4 BGP neighbor lists no IPv4 peer")
	ErrBadNeighbor      = errors.New("the IPv4 BGP neighbor is incomplete")
	ErrNoPrivateNetwork = errors.New("no private IPv4 network")
)

// Annotations computes the node annotations the Equinix CCM (v3.3 and
// later) writes for a device: for its IPv4 neighbor, one set of keys per
// peer IP, the peer IPs sorted as strings (as the CCM sorts them) and
// numbered from 0:
//
//	metal.equinix.com/bgp-peers-{n}-node-asn  customer_as
//	metal.equinix.com/bgp-peers-{n}-peer-asn  peer_as
//	metal.equinix.com/bgp-peers-{n}-peer-ip   the peer IP
//	metal.equinix.com/bgp-peers-{n}-src-ip    customer_ip
//	metal.equinix.com/network-4-private       privateNetwork
//
// The CCM also writes bgp-peers-{n}-bgp-pass, the base64 of the project's
// MD5 password; this never does: annotations are readable by anyone who
// can read Nodes. IPv6 neighbors, and IPv6 addresses among the peer IPs,
// are ignored; a peer IP listed twice gets one entry. Where the CCM would
// log and write incomplete annotations, this returns an error instead.
func Annotations(neighbors []metal.BGPNeighbor, privateNetwork string) (map[string]string, error) {
	network, err := netip.ParsePrefix(privateNetwork)
	if err != nil || !network.Addr().Is4() {
		return nil, fmt.Errorf("%w: %q is not an IPv4 network", ErrNoPrivateNetwork, privateNetwork)
	}
	var n *metal.BGPNeighbor
	for i := range neighbors {
		if neighbors[i].AddressFamily == 4 {
			n = &neighbors[i] //nolint:gosec // G602: i ranges over neighbors
			break
		}
	}
	if n == nil {
		return nil, ErrNoIPv4Neighbor
	}
	src, err := netip.ParseAddr(n.CustomerIP)
	switch {
	case err != nil || !src.Is4():
		return nil, fmt.Errorf("%w: customer_ip %q is not an IPv4 address", ErrBadNeighbor, n.CustomerIP)
	case n.CustomerAS <= 0 || n.PeerAS <= 0:
		return nil, fmt.Errorf("%w: customer_as %d, peer_as %d", ErrBadNeighbor, n.CustomerAS, n.PeerAS)
	}
	var peers []string
	seen := map[string]bool{}
	for _, ip := range n.PeerIPs {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return nil, fmt.Errorf("%w: peer IP %q", ErrBadNeighbor, ip)
		}
		if !a.Is4() || seen[a.String()] {
			continue
		}
		seen[a.String()] = true
		peers = append(peers, a.String())
	}
	if len(peers) == 0 {
		return nil, ErrNoPeers
	}
	sort.Strings(peers)
	out := map[string]string{KeyPrivateNetwork: privateNetwork}
	nodeASN, peerASN := strconv.Itoa(n.CustomerAS), strconv.Itoa(n.PeerAS)
	for i, ip := range peers {
		out[PeerKey(i, infoNodeASN)] = nodeASN
		out[PeerKey(i, infoPeerASN)] = peerASN
		out[PeerKey(i, infoPeerIP)] = ip
		out[PeerKey(i, infoSourceIP)] = src.String()
	}
	return out, nil
}

// PrivateNetwork returns the network-4-private of a device as the CCM
// computes it: the parent block of its private management IPv4 address
// (the project's private /25 in the metro), as "network/cidr".
func PrivateNetwork(d *metal.Device) (string, error) {
	for _, ip := range d.IPAddresses {
		if ip.Public || !ip.Management || ip.AddressFamily != 4 {
			continue
		}
		if ip.ParentNetwork == "" {
			return "", fmt.Errorf("%w: the API gave no parent block for %s", ErrNoPrivateNetwork, ip.Address)
		}
		return ip.ParentNetwork, nil
	}
	return "", fmt.Errorf("%w: device %s has no private management IPv4 address", ErrNoPrivateNetwork, d.ID)
}

// managedKey matches every key the CCM writes and kube-vip reads under
// Prefix, including the unnumbered form older CCMs wrote.
var managedKey = regexp.MustCompile(`^` + regexp.QuoteMeta(Prefix) +
	`/((bgp-peers-[0-9]+-)?(node-asn|peer-asn|peer-ip|src-ip|bgp-pass|peer-multi-hop)|network-4-private)$`)

// IsManaged reports whether key is one of these annotations.
func IsManaged(key string) bool { return managedKey.MatchString(key) }

// Remove returns a copy of annotations without any of these keys, for a
// node whose session is gone. The input is not changed.
func Remove(annotations map[string]string) map[string]string {
	out := make(map[string]string, len(annotations))
	for k, v := range annotations {
		if !IsManaged(k) {
			out[k] = v
		}
	}
	return out
}

// Stale lists, sorted, the keys of current that are these annotations but
// not in desired: what a patch must delete besides setting desired (a
// node that had more peers, or a bgp-pass someone else wrote).
func Stale(current, desired map[string]string) []string {
	var out []string
	for k := range current {
		if _, keep := desired[k]; !keep && IsManaged(k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
