package bgpannotate

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

// Peer is one BGP peer as kube-vip configures it from a node's annotations.
type Peer struct {
	// Address is the router to peer with.
	Address netip.Addr
	// AS is the router's AS (peer-asn).
	AS uint32
	// LocalAS is the node's AS (node-asn).
	LocalAS uint32
	// SourceIP is the address kube-vip peers from and uses as router ID
	// (src-ip).
	SourceIP netip.Addr
	// Password is the MD5 password from bgp-pass, empty without it (which
	// is always the case for annotations this package writes).
	Password redact.Sensitive
	MultiHop bool
}

// ErrIncomplete is returned by Peers while the annotations are missing or
// unusable; kube-vip keeps waiting in that case.
var ErrIncomplete = errors.New("BGP annotations incomplete")

var (
	// kube-vip reads node-asn, src-ip, peer-asn, bgp-pass and
	// peer-multi-hop of peer 0 only (or the unnumbered keys older CCMs
	// wrote) and applies them to every peer; peer-ip of every n.
	firstPeerKey = regexp.MustCompile(`^` + regexp.QuoteMeta(Prefix) + `/(bgp-peers-0-)?(node-asn|src-ip|peer-asn|bgp-pass|peer-multi-hop)$`)
	peerIPKey    = regexp.MustCompile(`^` + regexp.QuoteMeta(Prefix) + `/(?:bgp-peers-([0-9]+)-)?peer-ip$`)
)

// Peers reads node annotations the way kube-vip --annotations
// metal.equinix.com does (kube-vip pkg/manager/watch_annotations.go) and
// returns the peers it would configure. Where kube-vip's result depends on
// map order it is made deterministic: the numbered key wins over the
// unnumbered one, and peers come in the order of n (unnumbered first), each
// peer-ip value split at commas as kube-vip splits them.
func Peers(annotations map[string]string) ([]Peer, error) {
	first := map[string]string{}
	numbered := map[string]bool{}
	for k, v := range annotations {
		m := firstPeerKey.FindStringSubmatch(k)
		if m == nil || (numbered[m[2]] && m[1] == "") {
			continue
		}
		first[m[2]] = v
		numbered[m[2]] = m[1] != ""
	}
	var base Peer
	var err error
	if base.LocalAS, err = asn(first, infoNodeASN); err != nil {
		return nil, err
	}
	if base.SourceIP, err = address(first[infoSourceIP], infoSourceIP); err != nil {
		return nil, err
	}
	if base.AS, err = asn(first, infoPeerASN); err != nil {
		return nil, err
	}
	if pass := first[infoPassword]; pass != "" {
		decoded, err := base64.StdEncoding.DecodeString(pass)
		if err != nil {
			return nil, fmt.Errorf("%w: %s is not base64", ErrIncomplete, infoPassword)
		}
		base.Password = redact.Sensitive(decoded)
	}
	switch v, ok := first[infoMultiHop]; {
	case !ok:
	case v == "true":
		base.MultiHop = true
	case v == "false":
	default:
		return nil, fmt.Errorf("%w: %s is %q, must be \"true\" or \"false\"", ErrIncomplete, infoMultiHop, v)
	}
	addresses, err := peerAddresses(annotations)
	if err != nil {
		return nil, err
	}
	out := make([]Peer, 0, len(addresses))
	for _, a := range addresses {
		p := base
		p.Address = a
		out = append(out, p)
	}
	return out, nil
}

func asn(first map[string]string, info string) (uint32, error) {
	v := first[info]
	if v == "" {
		return 0, fmt.Errorf("%w: %s value missing or empty", ErrIncomplete, info)
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q is not an AS number", ErrIncomplete, info, v)
	}
	return uint32(n), nil
}

func address(v, info string) (netip.Addr, error) {
	if v == "" {
		return netip.Addr{}, fmt.Errorf("%w: %s value missing or empty", ErrIncomplete, info)
	}
	a, err := netip.ParseAddr(strings.TrimSpace(v))
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%w: %s %q is not an IP address", ErrIncomplete, info, v)
	}
	return a, nil
}

// peerAddresses collects every peer-ip, ordered by n.
func peerAddresses(annotations map[string]string) ([]netip.Addr, error) {
	type numbered struct {
		n     int
		value string
	}
	var found []numbered
	for k, v := range annotations {
		m := peerIPKey.FindStringSubmatch(k)
		if m == nil {
			continue
		}
		n := -1
		if m[1] != "" {
			var err error
			if n, err = strconv.Atoi(m[1]); err != nil {
				continue
			}
		}
		found = append(found, numbered{n: n, value: v})
	}
	sort.Slice(found, func(i, j int) bool { return found[i].n < found[j].n })
	var out []netip.Addr
	for _, f := range found {
		for _, part := range strings.Split(f.value, ",") {
			if part = strings.TrimSpace(part); part == "" {
				continue
			}
			a, err := address(part, infoPeerIP)
			if err != nil {
				return nil, err
			}
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s value missing or empty", ErrIncomplete, infoPeerIP)
	}
	return out, nil
}
