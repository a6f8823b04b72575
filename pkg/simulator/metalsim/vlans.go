package metalsim

import (
	"fmt"
	"slices"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

const (
	minVXLAN     = 2
	maxVXLAN     = 3999
	autoVXLANLow = 1000
	autoVXLANTop = 1999
)

func (s *Simulator) createVirtualNetwork(c *call) (reply, error) {
	p, err := c.projectLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	var in metalv1.VirtualNetworkCreateInput
	if err := c.decode(&in); err != nil {
		return reply{}, err
	}
	if in.Metro == nil {
		if in.Facility != nil {
			return reply{}, errInvalid("Facility is no longer supported for virtual networks, please use metro")
		}
		return reply{}, errInvalid("Metro is required")
	}
	m, ok := findMetro(in.GetMetro())
	if !ok {
		return reply{}, errInvalid(fmt.Sprintf("Metro %s is not valid", in.GetMetro()))
	}
	vx, err := s.pickVXLANLocked(p, m, in.Vxlan)
	if err != nil {
		return reply{}, err
	}
	id := s.ids.uuid()
	v := &vlan{project: p, metro: m, ports: map[*port]bool{}, obj: metalv1.VirtualNetwork{
		Id:                       ptr(id),
		Href:                     ptr(vlanHref(id)),
		Vxlan:                    ptr(vx),
		MetroCode:                ptr(m.code),
		Description:              in.Description,
		Tags:                     append([]string{}, in.Tags...),
		CreatedAt:                ptr(c.now),
		AssignedToVirtualCircuit: ptr(false),
	}}
	s.vlans[id] = v
	return jsonReply(201, s.renderVLAN(v, c.includes()))
}

// pickVXLANLocked validates a requested vxlan or, without one, picks the
// lowest free one in 1000-1999; vxlans are unique per project and metro.
func (s *Simulator) pickVXLANLocked(p *project, m metroInfo, want *int32) (int32, error) {
	taken := map[int32]bool{}
	for _, v := range s.vlans {
		if v.project == p && v.metro.code == m.code {
			taken[v.vxlan()] = true
		}
	}
	if want != nil {
		switch {
		case *want < minVXLAN || *want > maxVXLAN:
			return 0, errInvalid(fmt.Sprintf("vxlan must be between %d and %d", minVXLAN, maxVXLAN))
		case taken[*want]:
			return 0, errInvalid(fmt.Sprintf("vxlan %d is already in use in metro %s", *want, m.code))
		}
		return *want, nil
	}
	for vx := int32(autoVXLANLow); vx <= autoVXLANTop; vx++ {
		if !taken[vx] {
			return vx, nil
		}
	}
	return 0, errInvalid(fmt.Sprintf("No free vxlan left in metro %s", m.code))
}

func (s *Simulator) findVirtualNetworks(c *call) (reply, error) {
	p, err := c.projectLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	metro := c.query("metro")
	in := c.includes()
	var vs []*vlan
	for _, v := range s.vlans {
		if v.project == p && (metro == "" || v.metro.code == metro || v.metro.id == metro) {
			vs = append(vs, v)
		}
	}
	slices.SortFunc(vs, func(a, b *vlan) int {
		if c := a.obj.GetCreatedAt().Compare(b.obj.GetCreatedAt()); c != 0 {
			return c
		}
		return int(a.vxlan() - b.vxlan())
	})
	list := metalv1.VirtualNetworkList{VirtualNetworks: []metalv1.VirtualNetwork{}}
	for _, v := range vs {
		list.VirtualNetworks = append(list.VirtualNetworks, s.renderVLAN(v, in))
	}
	return jsonReply(200, list)
}

func (s *Simulator) getVirtualNetwork(c *call) (reply, error) {
	v, err := c.vlanLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	return jsonReply(200, s.renderVLAN(v, c.includes()))
}

func (s *Simulator) deleteVirtualNetwork(c *call) (reply, error) {
	v, err := c.vlanLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	if n := len(v.ports); n > 0 {
		return reply{}, errConflict("Virtual network %d is assigned to %d port(s), unassign it first", v.vxlan(), n)
	}
	delete(s.vlans, v.id())
	return emptyReply(204)
}

// attach records that p carries v.
func (v *vlan) attach(p *port) {
	if !v.ports[p] {
		v.ports[p] = true
		v.devices.ref(p.dev)
	}
}

// detach records that p no longer carries v.
func (v *vlan) detach(p *port) {
	if v.ports[p] {
		delete(v.ports, p)
		v.devices.unref(p.dev)
	}
}

func (s *Simulator) renderVLAN(v *vlan, in includes) metalv1.VirtualNetwork {
	out := v.obj
	out.Tags = append([]string{}, v.obj.Tags...)
	out.AssignedTo = &metalv1.Project{Href: ptr(projectHref(v.project.id))}
	if in.has("metro") {
		out.Metro = ptr(v.metro.metro())
	} else {
		out.Metro = &metalv1.Metro{AdditionalProperties: hrefOnly(metroHref(v.metro))}
	}
	out.Instances = []metalv1.Device{}
	if in.shallowVLANs {
		return out
	}
	for _, d := range v.devices.all() {
		if in.has("instances") {
			out.Instances = append(out.Instances, s.renderDevice(d, includes{}, s.clock.Now()))
		} else {
			out.Instances = append(out.Instances, metalv1.Device{Href: ptr(deviceHref(d.id()))})
		}
	}
	return out
}
