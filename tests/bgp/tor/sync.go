package tor

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	api "github.com/osrg/gobgp/v3/api"

	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// importPolicy is the routers' one import policy: a statement per device
// accepting its announceable prefixes from its address; everything else
// is rejected, as Metal's routers filtered what customers announced.
const importPolicy = "metal-import"

// neighbor is what a router was configured with for one device.
type neighbor struct {
	deviceID  string
	as        uint32
	md5       string
	maxPrefix int
}

func neighborOf(p metalsim.RouterPeer) neighbor {
	return neighbor{deviceID: p.DeviceID, as: p.CustomerAS, md5: p.MD5, maxPrefix: p.MaxPrefix}
}

// sync brings every router in line with the simulator's sessions and
// reports what the routers see.
func (t *ToR) sync(ctx context.Context) error {
	peers := t.sim.RouterPeers()
	desired := make(map[netip.Addr]metalsim.RouterPeer, len(peers))
	for _, p := range peers {
		desired[p.CustomerIP] = p
	}
	var errs []error
	if !t.md5 && !t.md5Warned && slices.ContainsFunc(peers, func(p metalsim.RouterPeer) bool { return p.MD5 != "" }) {
		t.md5Warned = true
		t.log.Warn("the routers cannot check BGP MD5 passwords in this process (run with GODEBUG=multipathtcp=0); sessions of projects with a password stay down")
	}
	for _, r := range t.routers {
		if err := r.configure(ctx, peers, desired, t.md5); err != nil {
			errs = append(errs, fmt.Errorf("router %s: %w", r.ip, err))
		}
	}
	report, routes, err := t.collect(ctx)
	if err != nil {
		errs = append(errs, err)
	} else {
		t.sim.ReportRouters(report)
		t.mu.Lock()
		t.routes = routes
		t.mu.Unlock()
	}
	return errors.Join(errs...)
}

// configure removes stale neighbors, installs the import filter and adds
// the new neighbors, in that order, so no route is accepted unfiltered.
func (r *router) configure(ctx context.Context, peers []metalsim.RouterPeer, desired map[netip.Addr]metalsim.RouterPeer, md5 bool) error {
	for ip, n := range r.peers {
		if p, ok := desired[ip]; ok && neighborOf(p) == n {
			continue
		}
		if err := r.srv.DeletePeer(ctx, &api.DeletePeerRequest{Address: ip.String()}); err != nil {
			return fmt.Errorf("remove neighbor %s: %w", ip, err)
		}
		delete(r.peers, ip)
	}
	if err := r.installPolicy(ctx, peers); err != nil {
		return err
	}
	for _, p := range peers {
		if _, ok := r.peers[p.CustomerIP]; ok {
			continue
		}
		if err := r.srv.AddPeer(ctx, &api.AddPeerRequest{Peer: r.peerConfig(p, md5)}); err != nil {
			return fmt.Errorf("add neighbor %s of device %s: %w", p.CustomerIP, p.DeviceID, err)
		}
		r.peers[p.CustomerIP] = neighborOf(p)
	}
	return nil
}

// peerConfig accepts the device's connection on the router's address with
// the session parameters the neighbor data gives the device.
func (r *router) peerConfig(p metalsim.RouterPeer, md5 bool) *api.Peer {
	afi := &api.AfiSafi{Config: &api.AfiSafiConfig{Family: ipv4Unicast, Enabled: true}}
	if p.MaxPrefix > 0 {
		// More announcements than max_prefix tore the session down.
		afi.PrefixLimits = &api.PrefixLimit{Family: ipv4Unicast, MaxPrefixes: uint32(p.MaxPrefix)}
	}
	return &api.Peer{
		Conf: &api.PeerConf{
			NeighborAddress: p.CustomerIP.String(),
			PeerAsn:         p.CustomerAS,
			AuthPassword:    p.MD5,
			Description:     p.DeviceID,
			// A password the listener cannot check must not let anyone in.
			AdminDown: p.MD5 != "" && !md5,
		},
		Transport:    &api.Transport{LocalAddress: r.ip.String(), PassiveMode: true},
		EbgpMultihop: &api.EbgpMultihop{Enabled: true, MultihopTtl: 255},
		AfiSafis:     []*api.AfiSafi{afi},
	}
}

// installPolicy replaces the import filter when the accepted prefixes
// changed and re-applies it to the routes already received.
func (r *router) installPolicy(ctx context.Context, peers []metalsim.RouterPeer) error {
	req, key := policyFor(peers)
	if key == r.policy {
		return nil
	}
	if err := r.srv.SetPolicies(ctx, req); err != nil {
		return fmt.Errorf("set import filter: %w", err)
	}
	if r.policy == "" {
		err := r.srv.SetPolicyAssignment(ctx, &api.SetPolicyAssignmentRequest{Assignment: &api.PolicyAssignment{
			Name: "global", Direction: api.PolicyDirection_IMPORT,
			Policies: []*api.Policy{{Name: importPolicy}}, DefaultAction: api.RouteAction_REJECT,
		}})
		if err != nil {
			return fmt.Errorf("assign import filter: %w", err)
		}
	}
	r.policy = key
	if len(r.peers) == 0 {
		return nil
	}
	err := r.srv.ResetPeer(ctx, &api.ResetPeerRequest{Address: "all", Soft: true, Direction: api.ResetPeerRequest_IN})
	if err != nil {
		return fmt.Errorf("re-apply import filter: %w", err)
	}
	return nil
}

// policyFor builds the import filter and a key that changes with it.
func policyFor(peers []metalsim.RouterPeer) (*api.SetPoliciesRequest, string) {
	sorted := slices.Clone(peers)
	slices.SortFunc(sorted, func(a, b metalsim.RouterPeer) int { return a.CustomerIP.Compare(b.CustomerIP) })
	req := &api.SetPoliciesRequest{}
	policy := &api.Policy{Name: importPolicy}
	var key strings.Builder
	key.WriteString("v1")
	for _, p := range sorted {
		if len(p.Accept) == 0 {
			continue
		}
		ip := p.CustomerIP.String()
		prefixes := &api.DefinedSet{DefinedType: api.DefinedType_PREFIX, Name: "accept-" + ip}
		fmt.Fprintf(&key, ";%s:", ip)
		for _, a := range p.Accept {
			longest := uint32(32)
			if a.Exact {
				longest = uint32(a.Prefix.Bits())
			}
			prefixes.Prefixes = append(prefixes.Prefixes, &api.Prefix{
				IpPrefix: a.Prefix.String(), MaskLengthMin: uint32(a.Prefix.Bits()), MaskLengthMax: longest,
			})
			fmt.Fprintf(&key, "%s-%d,", a.Prefix, longest)
		}
		from := &api.DefinedSet{DefinedType: api.DefinedType_NEIGHBOR, Name: "device-" + ip, List: []string{ip + "/32"}}
		req.DefinedSets = append(req.DefinedSets, prefixes, from)
		policy.Statements = append(policy.Statements, &api.Statement{
			Name: "device-" + ip,
			Conditions: &api.Conditions{
				PrefixSet:   &api.MatchSet{Type: api.MatchSet_ANY, Name: prefixes.Name},
				NeighborSet: &api.MatchSet{Type: api.MatchSet_ANY, Name: from.Name},
			},
			Actions: &api.Actions{RouteAction: api.RouteAction_ACCEPT},
		})
	}
	req.Policies = []*api.Policy{policy}
	return req, key.String()
}

// collect reads every router's sessions and routing table.
func (t *ToR) collect(ctx context.Context) (metalsim.RouterReport, map[netip.Prefix]string, error) {
	sessions := map[string]*metalsim.SessionReport{}
	learned := map[string]map[netip.Prefix]bool{}
	routes := map[netip.Prefix]string{}
	for _, r := range t.routers {
		for _, n := range r.peers {
			if sessions[n.deviceID] == nil {
				sessions[n.deviceID] = &metalsim.SessionReport{}
				learned[n.deviceID] = map[netip.Prefix]bool{}
			}
		}
	}
	for _, r := range t.routers {
		deviceOf := func(addr string) (string, bool) {
			ip, err := netip.ParseAddr(addr)
			if err != nil {
				return "", false
			}
			n, ok := r.peers[ip]
			return n.deviceID, ok
		}
		err := r.srv.ListPeer(ctx, &api.ListPeerRequest{}, func(p *api.Peer) {
			if id, ok := deviceOf(p.GetConf().GetNeighborAddress()); ok &&
				p.GetState().GetSessionState() == api.PeerState_ESTABLISHED {
				sessions[id].Established++
			}
		})
		if err != nil {
			return metalsim.RouterReport{}, nil, fmt.Errorf("router %s: list neighbors: %w", r.ip, err)
		}
		err = r.srv.ListPath(ctx, &api.ListPathRequest{TableType: api.TableType_GLOBAL, Family: ipv4Unicast}, func(d *api.Destination) {
			prefix, err := netip.ParsePrefix(d.GetPrefix())
			if err != nil {
				return
			}
			for _, p := range d.GetPaths() {
				id, ok := deviceOf(p.GetNeighborIp())
				if !ok {
					continue
				}
				learned[id][prefix] = true
				if _, taken := routes[prefix]; p.GetBest() && !taken {
					routes[prefix] = id
				}
			}
		})
		if err != nil {
			return metalsim.RouterReport{}, nil, fmt.Errorf("router %s: list routes: %w", r.ip, err)
		}
	}
	report := metalsim.RouterReport{Sessions: map[string]metalsim.SessionReport{}, Routes: routes}
	for id, sr := range sessions {
		for p := range learned[id] {
			sr.Routes = append(sr.Routes, p)
		}
		slices.SortFunc(sr.Routes, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
		report.Sessions[id] = *sr
	}
	return report, routes, nil
}
