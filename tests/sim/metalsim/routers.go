package metalsim

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

// Routers describes a top-of-rack attached to the simulator: real BGP
// routers (package tor) that devices' speakers peer with. Without one the
// simulator still answers every BGP call, but nothing listens at the peer
// addresses and sessions stay "unknown".
type Routers struct {
	// PeerIPs are the routers' IPv4 addresses, reported as the peer_ips of
	// every IPv4 neighbor instead of 169.254.255.1 and .2.
	PeerIPs []netip.Addr
	// PrivatePool is where projects' private /25s come from from now on,
	// so that devices' private addresses (their customer_ip) are addresses
	// a test speaker can bind, such as 127.64.0.0/10 on loopback.
	PrivatePool netip.Prefix
}

// RouterPeer is one IPv4 BGP session the routers must accept.
type RouterPeer struct {
	DeviceID  string
	ProjectID string
	// CustomerIP is the device's private IPv4, the session's source.
	CustomerIP netip.Addr
	CustomerAS uint32
	// MD5 is the project's BGP password, empty for none. Never log it.
	MD5       string
	MaxPrefix int
	// Accept are the prefixes the device may announce: the routes_in of
	// its neighbor data.
	Accept []AcceptedRoute
}

// AcceptedRoute is a prefix a device may announce; without Exact any
// more-specific prefix inside it is accepted too.
type AcceptedRoute struct {
	Prefix netip.Prefix
	Exact  bool
}

// RouterReport is what the routers saw, reported by ReportRouters.
type RouterReport struct {
	// Sessions are keyed by device ID.
	Sessions map[string]SessionReport
	// Routes maps each accepted prefix to the device it is routed to.
	Routes map[netip.Prefix]string
}

// SessionReport describes one device's IPv4 session on the routers.
type SessionReport struct {
	// Established counts the routers the device's speaker is established with.
	Established int
	// Routes are the prefixes accepted from the device.
	Routes []netip.Prefix
}

type routerState struct {
	cfg     Routers
	changed chan struct{}
	report  RouterReport
}

// AttachRouters connects a top-of-rack. It must come before any device
// gets a private address, since it moves the private pool. The returned
// channel receives a value (coalesced) whenever RouterPeers may have
// changed: sessions, BGP configs, reservations or device addresses.
func (s *Simulator) AttachRouters(r Routers) (<-chan struct{}, error) {
	if len(r.PeerIPs) == 0 || !r.PrivatePool.Addr().Is4() || r.PrivatePool.Bits() > privateBlockBits {
		return nil, fmt.Errorf("%w: routers need IPv4 peer addresses and a private pool of /%d or larger", ErrInvalid, privateBlockBits)
	}
	for _, ip := range r.PeerIPs {
		if !ip.Is4() {
			return nil, fmt.Errorf("%w: router address %s is not IPv4", ErrInvalid, ip)
		}
	}
	var err error
	var ch chan struct{}
	s.locked(func() {
		if s.routers != nil {
			err = fmt.Errorf("routers are already attached: %w", ErrWrongState)
			return
		}
		for _, b := range s.blocks {
			if b.kind == metalv1.IPRESERVATIONTYPE_PRIVATE_IPV4 && b.management {
				err = fmt.Errorf("private addresses were handed out already; attach routers first: %w", ErrWrongState)
				return
			}
		}
		s.alloc.privateBase = r.PrivatePool.Masked().Addr()
		s.alloc.private4 = 0
		ch = make(chan struct{}, 1)
		cfg := Routers{PeerIPs: slices.Clone(r.PeerIPs), PrivatePool: r.PrivatePool}
		s.routers = &routerState{cfg: cfg, changed: ch}
		s.routersChangedLocked()
	})
	return ch, err
}

// DetachRouters forgets the routers and what they reported; the private
// pool stays where it is.
func (s *Simulator) DetachRouters() {
	s.locked(func() { s.routers = nil })
}

// routersChangedLocked wakes the routers without blocking.
func (s *Simulator) routersChangedLocked() {
	if s.routers == nil {
		return
	}
	select {
	case s.routers.changed <- struct{}{}:
	default:
	}
}

// RouterPeers lists the IPv4 sessions of every project whose BGP is
// enabled, ordered by device creation.
func (s *Simulator) RouterPeers() []RouterPeer {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advanceLocked(s.clock.Now())
	devices := slices.Collect(maps.Values(s.devices))
	slices.SortFunc(devices, func(a, b *device) int { return cmp.Compare(a.seq, b.seq) })
	var out []RouterPeer
	for _, d := range devices {
		cfg := d.project.bgp
		if cfg == nil || cfg.obj.GetStatus() != metalv1.BGPCONFIGSTATUS_ENABLED {
			continue
		}
		ip, ok := privateIPv4(d)
		if !ok {
			continue
		}
		for _, bs := range d.sessions {
			if bs.obj.AddressFamily != metalv1.BGPSESSIONADDRESSFAMILY_IPV4 {
				continue
			}
			out = append(out, RouterPeer{
				DeviceID: d.id(), ProjectID: d.project.id, CustomerIP: ip,
				CustomerAS: uint32(cfg.obj.GetAsn()), MD5: cfg.md5,
				MaxPrefix: int(cfg.obj.GetMaxPrefix()), Accept: s.acceptedRoutesLocked(d),
			})
		}
	}
	return out
}

// ReportRouters records the routers' sessions and routing table; session
// status, learned_routes and RouteOf reflect it. Ignored while no routers
// are attached.
func (s *Simulator) ReportRouters(rep RouterReport) {
	s.locked(func() {
		if s.routers == nil {
			return
		}
		out := RouterReport{Sessions: map[string]SessionReport{}, Routes: maps.Clone(rep.Routes)}
		for id, sr := range rep.Sessions {
			out.Sessions[id] = SessionReport{Established: sr.Established, Routes: slices.Clone(sr.Routes)}
		}
		s.routers.report = out
	})
}

// RouteOf returns the device the routers route prefix to, as last
// reported by the routers.
func (s *Simulator) RouteOf(prefix netip.Prefix) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.routers == nil {
		return "", false
	}
	id, ok := s.routers.report.Routes[prefix.Masked()]
	return id, ok
}

// acceptedRoutesLocked are the prefixes d may announce: the project's
// created Elastic IP reservations in d's metro and its global IPs.
func (s *Simulator) acceptedRoutesLocked(d *device) []AcceptedRoute {
	var blocks []*ipBlock
	for _, b := range d.project.elastic.all() {
		if b.state != "created" {
			continue
		}
		if b.kind == metalv1.IPRESERVATIONTYPE_GLOBAL_IPV4 ||
			(b.kind == metalv1.IPRESERVATIONTYPE_PUBLIC_IPV4 && b.metro.code == d.metro.code) {
			blocks = append(blocks, b)
		}
	}
	slices.SortFunc(blocks, func(a, b *ipBlock) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]AcceptedRoute, 0, len(blocks))
	for _, b := range blocks {
		out = append(out, AcceptedRoute{Prefix: b.prefix, Exact: b.prefix.Bits() == 32})
	}
	return out
}

// sessionStateLocked is a session's status and learned routes: "unknown"
// until routers report on it, then "up" while the device's speaker is
// established with at least one router and "down" otherwise.
func (s *Simulator) sessionStateLocked(bs *bgpSession) (string, []string) {
	if s.routers == nil || bs.obj.AddressFamily != metalv1.BGPSESSIONADDRESSFAMILY_IPV4 {
		return "unknown", []string{}
	}
	sr, ok := s.routers.report.Sessions[bs.device.id()]
	if !ok {
		return "unknown", []string{}
	}
	routes := make([]string, 0, len(sr.Routes))
	for _, p := range sr.Routes {
		routes = append(routes, p.String())
	}
	slices.Sort(routes)
	if sr.Established > 0 {
		return "up", routes
	}
	return "down", routes
}

func privateIPv4(d *device) (netip.Addr, bool) {
	for _, a := range d.ips {
		if a.management && a.block.kind == metalv1.IPRESERVATIONTYPE_PRIVATE_IPV4 {
			return a.prefix.Addr(), true
		}
	}
	return netip.Addr{}, false
}
