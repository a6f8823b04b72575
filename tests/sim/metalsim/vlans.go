package metalsim

import (
	"bytes"
	"encoding/json"
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
	return s.vlanReply(201, v, c.includes())
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
	// The list's JSON as metalv1.VirtualNetworkList encodes it.
	size := 64
	for _, v := range vs {
		size += 512 + v.devices.len()*hrefSize
	}
	body := append(make([]byte, 0, size), `{"virtual_networks":[`...)
	for i, v := range vs {
		if i > 0 {
			body = append(body, ',')
		}
		if body, err = s.appendVLANJSON(body, v, in); err != nil {
			return reply{}, err
		}
	}
	return reply{status: 200, body: append(body, "]}"...), contentType: "application/json"}, nil
}

func (s *Simulator) getVirtualNetwork(c *call) (reply, error) {
	v, err := c.vlanLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	return s.vlanReply(200, v, c.includes())
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

// renderVLAN is a VLAN as the SDK's model, for the VLANs nested in ports.
func (s *Simulator) renderVLAN(v *vlan, in includes) metalv1.VirtualNetwork {
	out := s.vlanBase(v, in)
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

// vlanBase is a VLAN without its instances.
func (s *Simulator) vlanBase(v *vlan, in includes) metalv1.VirtualNetwork {
	out := v.obj
	out.Tags = append([]string{}, v.obj.Tags...)
	out.AssignedTo = &metalv1.Project{Href: ptr(projectHref(v.project.id))}
	if in.has("metro") {
		out.Metro = ptr(v.metro.metro())
	} else {
		out.Metro = &metalv1.Metro{AdditionalProperties: hrefOnly(metroHref(v.metro))}
	}
	out.Instances = []metalv1.Device{}
	return out
}

func (s *Simulator) vlanReply(status int, v *vlan, in includes) (reply, error) {
	b, err := s.appendVLANJSON(nil, v, in)
	if err != nil {
		return reply{}, err
	}
	return reply{status: status, body: b, contentType: "application/json"}, nil
}

// appendVLANJSON appends a VLAN's answer, encoded: the JSON of renderVLAN. Every
// device on the VLAN is in it, as an href unless included; through the
// SDK's model each href cost a map and a MarshalJSON of its own, which
// made a VLAN shared by 2,000 devices take 20 ms of CPU to list. The VLAN
// without its devices still goes through the model, and the hrefs are
// written into its empty instances list.
func (s *Simulator) appendVLANJSON(dst []byte, v *vlan, in includes) ([]byte, error) {
	if in.has("instances") || in.shallowVLANs {
		b, err := json.Marshal(s.renderVLAN(v, in))
		return append(dst, b...), err
	}
	base, err := json.Marshal(s.vlanBase(v, in))
	if err != nil {
		return nil, fmt.Errorf("rendering VLAN %s: %w", v.id(), err)
	}
	// Quotes inside a JSON string are escaped, so this can only be the
	// VLAN's own field (its nested objects have no instances).
	at := bytes.Index(base, []byte(`"instances":[]`))
	if at < 0 {
		return nil, fmt.Errorf("rendering VLAN %s: no instances field in %s", v.id(), base)
	}
	at += len(`"instances":[`)
	dst = append(dst, base[:at]...)
	for i, d := range v.devices.all() {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"href":"`+apiPrefix+`/devices/`...)
		dst = appendJSONString(dst, d.id())
		dst = append(dst, `"}`...)
	}
	return append(dst, base[at:]...), nil
}

// hrefSize is about the length of one device's href object.
const hrefSize = len(`{"href":"`+apiPrefix+`/devices/"},`) + 36

// appendJSONString appends the inside of s's JSON string as encoding/json
// encodes it. IDs need no escaping and are copied; anything else goes
// through the encoder.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plainJSON[s[i]] {
			b, _ := json.Marshal(s) // a string always encodes
			return append(dst, b[1:len(b)-1]...)
		}
	}
	return append(dst, s...)
}

// plainJSON marks the bytes encoding/json copies into a string unchanged
// (a table: checking each byte of 4,000 IDs is the answer's main cost).
var plainJSON = func() (t [256]bool) {
	for _, c := range []byte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:") {
		t[c] = true
	}
	return t
}()
