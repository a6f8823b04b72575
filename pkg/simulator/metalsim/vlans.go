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
	v := &vlan{project: p, metro: m, obj: metalv1.VirtualNetwork{
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
	if ports := s.vlanPortsLocked(v); len(ports) > 0 {
		return reply{}, errConflict("Virtual network %d is assigned to %d port(s), unassign it first", v.vxlan(), len(ports))
	}
	delete(s.vlans, v.id())
	return emptyReply(204)
}

// vlanPortsLocked returns every port carrying v, ordered by device.
func (s *Simulator) vlanPortsLocked(v *vlan) []*port {
	var out []*port
	for _, d := range s.projectDevicesLocked(v.project.id) {
		for _, p := range d.ports {
			if slices.Contains(p.vlans, v) {
				out = append(out, p)
			}
		}
	}
	return out
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
	var seen []*device
	for _, p := range s.vlanPortsLocked(v) {
		if slices.Contains(seen, p.dev) {
			continue
		}
		seen = append(seen, p.dev)
		if in.has("instances") {
			out.Instances = append(out.Instances, s.renderDevice(p.dev, includes{}, s.clock.Now()))
		} else {
			out.Instances = append(out.Instances, metalv1.Device{Href: ptr(deviceHref(p.dev.id()))})
		}
	}
	return out
}
