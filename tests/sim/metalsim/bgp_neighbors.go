package metalsim

import (
	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

// getBgpNeighbors describes the peering of each session: the device's
// private IPv4 (or public IPv6) against Equinix's two peers in AS 65530.
func (s *Simulator) getBgpNeighbors(c *call) (reply, error) {
	d, err := c.deviceLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	out := metalv1.BgpSessionNeighbors{BgpNeighbors: []metalv1.BgpNeighborData{}}
	for _, bs := range d.sessions {
		out.BgpNeighbors = append(out.BgpNeighbors, s.neighborData(d, bs))
	}
	return jsonReply(200, out)
}

// neighborData is what the device needs to peer. With routers attached the
// IPv4 peers are their addresses. routes_in are the prefixes the routers
// accept from the device (its project's Elastic IPs in its metro and its
// global IPs); routes_out holds the default route when the session asked
// for it.
func (s *Simulator) neighborData(d *device, bs *bgpSession) metalv1.BgpNeighborData {
	cfg := d.project.bgp
	n := metalv1.BgpNeighborData{
		AddressFamily: ptr(int32(4)),
		CustomerAs:    ptr(int32(cfg.obj.GetAsn())),
		PeerAs:        ptr(int32(metalPeerAS)),
		PeerIps:       s.peerIPv4Locked(),
		Multihop:      ptr(true),
		Md5Enabled:    ptr(cfg.md5 != ""),
		RoutesIn:      []metalv1.BgpRoute{},
		RoutesOut:     []metalv1.BgpRoute{},
	}
	if cfg.md5 != "" {
		n.Md5Password = ptr(cfg.md5)
	}
	v6 := bs.obj.AddressFamily == metalv1.BGPSESSIONADDRESSFAMILY_IPV6
	if v6 {
		n.AddressFamily = ptr(int32(6))
		n.PeerIps = append([]string{}, peerIPv6...)
	}
	for _, a := range d.ips {
		if !a.management {
			continue
		}
		v4 := a.prefix.Addr().Is4()
		if (!v6 && v4 && a.block.kind == metalv1.IPRESERVATIONTYPE_PRIVATE_IPV4) || (v6 && !v4) {
			n.CustomerIp = ptr(a.prefix.Addr().String())
		}
	}
	if !v6 {
		for _, r := range s.acceptedRoutesLocked(d) {
			n.RoutesIn = append(n.RoutesIn, metalv1.BgpRoute{Route: ptr(r.Prefix.String()), Exact: ptr(r.Exact)})
		}
	}
	if bs.obj.GetDefaultRoute() {
		def := "0.0.0.0/0"
		if v6 {
			def = "::/0"
		}
		n.RoutesOut = append(n.RoutesOut, metalv1.BgpRoute{Route: ptr(def), Exact: ptr(true)})
	}
	return n
}

func (s *Simulator) peerIPv4Locked() []string {
	if s.routers == nil {
		return append([]string{}, peerIPv4...)
	}
	out := make([]string, 0, len(s.routers.cfg.PeerIPs))
	for _, ip := range s.routers.cfg.PeerIPs {
		out = append(out, ip.String())
	}
	return out
}
