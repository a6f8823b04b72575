package metalsim

import (
	"fmt"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

// The port model: each physical port is bonded or not, each bond is layer 2
// or layer 3 and every port carries a VLAN set and maybe a native VLAN.
// network_type is always derived from that, never stored.

// newPortsLocked gives a new device its ports: eth0..ethN-1 with fresh MACs,
// bond0 over eth0/eth1 and, on 4-NIC plans, bond1 over eth2/eth3. Every eth
// starts bonded and bond0 in layer 3. bond1 starts in layer 2 because it
// carries no addresses; the API reported it as layer2-bonded since 2021
// (terraform-provider-packet #306).
func (s *Simulator) newPortsLocked(d *device) {
	var eths []*port
	for i := range int(d.plan.nicCount) {
		eths = append(eths, &port{id: s.ids.uuid(), name: fmt.Sprintf("eth%d", i), dev: d, mac: s.ids.mac(), bonded: true})
	}
	for b := 0; 2*b+1 < len(eths); b++ {
		bond := &port{id: s.ids.uuid(), name: fmt.Sprintf("bond%d", b), dev: d, members: eths[2*b : 2*b+2], layer2: b > 0}
		d.ports = append(d.ports, bond)
		for _, m := range bond.members {
			m.bond = bond
			d.ports = append(d.ports, m)
		}
	}
	for _, p := range d.ports {
		s.ports[p.id] = p
	}
}

func (d *device) port(name string) *port {
	for _, p := range d.ports {
		if p.name == name {
			return p
		}
	}
	return nil
}

func (d *device) bonds() []*port {
	var out []*port
	for _, p := range d.ports {
		if p.isBond() {
			out = append(out, p)
		}
	}
	return out
}

// anyBonded reports whether a bond is active: the spec calls a bond port
// bonded when at least one member is.
func anyBonded(b *port) bool {
	for _, m := range b.members {
		if m.bonded {
			return true
		}
	}
	return false
}

func allBonded(b *port) bool {
	for _, m := range b.members {
		if !m.bonded {
			return false
		}
	}
	return true
}

func (p *port) isBonded() bool {
	if p.isBond() {
		return anyBonded(p)
	}
	return p.bonded
}

func bondNetworkType(b *port) metalv1.PortNetworkType {
	switch {
	case b.layer2 && anyBonded(b):
		return metalv1.PORTNETWORKTYPE_LAYER2_BONDED
	case b.layer2:
		return metalv1.PORTNETWORKTYPE_LAYER2_INDIVIDUAL
	case len(b.vlans) > 0:
		// VLANs on a layer-3 bond (terraform-provider-metal #95).
		return metalv1.PORTNETWORKTYPE_HYBRID_BONDED
	case allBonded(b):
		return metalv1.PORTNETWORKTYPE_LAYER3
	default:
		return metalv1.PORTNETWORKTYPE_HYBRID
	}
}

// portNetworkType: a bonded eth shares its bond's type; an unbonded eth is
// hybrid next to a layer-3 bond and layer2-individual otherwise.
func portNetworkType(p *port) metalv1.PortNetworkType {
	if p.isBond() {
		return bondNetworkType(p)
	}
	if p.bonded {
		return bondNetworkType(p.bond)
	}
	if !p.bond.layer2 {
		return metalv1.PORTNETWORKTYPE_HYBRID
	}
	return metalv1.PORTNETWORKTYPE_LAYER2_INDIVIDUAL
}

// deviceNetworkType follows packngo's GetNetworkType, plus hybrid-bonded
// when VLANs sit on a layer-3 bond0.
func deviceNetworkType(d *device) string {
	for _, b := range d.bonds() {
		if !anyBonded(b) {
			return string(metalv1.PORTNETWORKTYPE_LAYER2_INDIVIDUAL)
		}
	}
	for _, b := range d.bonds() {
		if !allBonded(b) {
			return string(metalv1.PORTNETWORKTYPE_HYBRID)
		}
	}
	if b := d.port("bond0"); b != nil && !b.layer2 && len(b.vlans) > 0 {
		return string(metalv1.PORTNETWORKTYPE_HYBRID_BONDED)
	}
	for _, a := range d.ips {
		if a.management {
			return string(metalv1.PORTNETWORKTYPE_LAYER3)
		}
	}
	return string(metalv1.PORTNETWORKTYPE_LAYER2_BONDED)
}

// isPureLayer2 reports whether the device has no layer-3 path at all, which
// cuts it off from the metadata service.
func isPureLayer2(d *device) bool {
	t := deviceNetworkType(d)
	return t == string(metalv1.PORTNETWORKTYPE_LAYER2_BONDED) || t == string(metalv1.PORTNETWORKTYPE_LAYER2_INDIVIDUAL)
}

// vlanRendering is how much of a port's VLANs is rendered.
type vlanRendering int

const (
	vlanHrefs   vlanRendering = iota // {"href": ...}
	vlanFull                         // the whole VLAN, instances included
	vlanShallow                      // the whole VLAN without its instances
)

func (s *Simulator) renderPorts(d *device, vr vlanRendering) []metalv1.Port {
	out := make([]metalv1.Port, 0, len(d.ports))
	for _, p := range d.ports {
		out = append(out, s.renderPort(p, vr))
	}
	return out
}

func (s *Simulator) renderPort(p *port, vr vlanRendering) metalv1.Port {
	out := metalv1.Port{
		Id:                        ptr(p.id),
		Href:                      ptr(portHref(p.id)),
		Name:                      ptr(p.name),
		Type:                      ptr(metalv1.PORTTYPE_NETWORK_PORT),
		NetworkType:               ptr(portNetworkType(p)),
		Data:                      &metalv1.PortData{Bonded: ptr(p.isBonded())},
		DisbondOperationSupported: ptr(true),
		VirtualNetworks:           []metalv1.VirtualNetwork{},
	}
	if p.isBond() {
		out.Type = ptr(metalv1.PORTTYPE_NETWORK_BOND_PORT)
	} else {
		// Hardware is only picked when provisioning starts, so a queued
		// device has no MACs yet; clients must not depend on early MACs.
		if p.dev.state != metalv1.DEVICESTATE_QUEUED {
			out.Data.Mac = ptr(p.mac)
		}
		out.Bond = &metalv1.BondPortData{Id: ptr(p.bond.id), Name: ptr(p.bond.name)}
	}
	for _, v := range p.vlans {
		out.VirtualNetworks = append(out.VirtualNetworks, s.vlanRef(v, vr))
	}
	if p.native != nil {
		out.NativeVirtualNetwork = ptr(s.vlanRef(p.native, vr))
	}
	return out
}

func (s *Simulator) vlanRef(v *vlan, vr vlanRendering) metalv1.VirtualNetwork {
	switch vr {
	case vlanFull:
		return s.renderVLAN(v, includes{})
	case vlanShallow:
		return s.renderVLAN(v, includes{shallowVLANs: true})
	default:
		return metalv1.VirtualNetwork{Href: ptr(vlanHref(v.id()))}
	}
}

func (s *Simulator) networkStateLocked(d *device) NetworkState {
	ns := NetworkState{Type: deviceNetworkType(d), MACs: map[string]string{}}
	for _, p := range d.ports {
		ps := PortState{
			ID: p.id, Name: p.name, MAC: p.mac, Bonded: p.isBonded(),
			Layer2: p.isBond() && p.layer2, NetworkType: portNetworkType(p),
		}
		if !p.isBond() {
			ns.MACs[p.name] = p.mac
			ps.Bond = p.bond.name
		}
		for _, v := range p.vlans {
			ps.VLANs = append(ps.VLANs, v.vxlan())
		}
		if p.native != nil {
			ps.NativeVLAN = p.native.vxlan()
		}
		ns.Ports = append(ns.Ports, ps)
	}
	for _, a := range d.ips {
		ns.Addresses = append(ns.Addresses, addressOf(a))
	}
	return ns
}

func addressOf(a *ipAssignment) Address {
	family := 4
	if a.prefix.Addr().Is6() {
		family = 6
	}
	return Address{
		ID:         a.id,
		Family:     family,
		Address:    a.prefix.Addr().String(),
		Gateway:    a.prefix.Masked().Addr().String(),
		Netmask:    netmask(a.prefix),
		Network:    a.prefix.Masked().Addr().String(),
		CIDR:       a.prefix.Bits(),
		Public:     a.block.kind != metalv1.IPRESERVATIONTYPE_PRIVATE_IPV4,
		Management: a.management,
	}
}
