package network

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// Op is one kind of port call.
type Op string

// Port operations, named after the Metal API calls.
const (
	OpUnassign Op = "unassign"
	OpAssign   Op = "assign"
	OpBond     Op = "bond"
	OpDisbond  Op = "disbond"
	OpToLayer2 Op = "convert-layer-2"
	OpToLayer3 Op = "convert-layer-3"
)

// Step is one Metal API call on one port.
type Step struct {
	Op     Op
	Port   string
	PortID string
	// Bulk bonds or disbonds every member of a bond at once.
	Bulk   bool
	VXLAN  int
	VLANID string
}

func (s Step) String() string {
	switch s.Op {
	case OpAssign:
		return fmt.Sprintf("assign VLAN %s to %s", s.vlanName(), s.Port)
	case OpUnassign:
		return fmt.Sprintf("unassign VLAN %s from %s", s.vlanName(), s.Port)
	case OpBond, OpDisbond:
		if s.Bulk {
			return fmt.Sprintf("%s every port of %s", s.Op, s.Port)
		}
		return fmt.Sprintf("%s %s", s.Op, s.Port)
	default:
		return fmt.Sprintf("%s on %s", s.Op, s.Port)
	}
}

// vlanName is the VXLAN number, or the VLAN's ID when its number is unknown
// (a VLAN missing from the metro's list, which can only be leaving).
func (s Step) vlanName() string {
	if s.VXLAN > 0 {
		return strconv.Itoa(s.VXLAN)
	}
	return s.VLANID
}

// AfterVLANSteps returns ports as they are once the API has answered steps,
// which must all be VLAN assignments: the API assigns or unassigns a VLAN
// before it answers, so, unlike a bond change or a conversion, these need
// no read-back.
func AfterVLANSteps(ports []metal.Port, steps []Step) []metal.Port {
	out := make([]metal.Port, len(ports))
	for i := range ports {
		out[i] = ports[i]
		out[i].VLANs = slices.Clone(ports[i].VLANs)
	}
	for _, s := range steps {
		for i := range out {
			if out[i].ID != s.PortID {
				continue
			}
			switch s.Op {
			case OpAssign:
				out[i].VLANs = append(out[i].VLANs, metal.VLANRef{ID: s.VLANID, VXLAN: s.VXLAN})
			case OpUnassign:
				out[i].VLANs = slices.DeleteFunc(out[i].VLANs, func(v metal.VLANRef) bool { return v.ID == s.VLANID })
			}
		}
	}
	return out
}

// Structural reports whether a step changes a port's bonding or layer, which
// the API may answer before it has landed.
func (s Step) Structural() bool { return s.Op != OpAssign && s.Op != OpUnassign }

// AfterAnswer returns ports as they are after a structural step, when the
// API's answer to it shows the whole change: a bond or disbond of one port
// whose answer has the bonding asked for. Bulk steps change ports the answer
// does not show, and a conversion changes the device's addresses, so those
// are read back (ok is false).
func AfterAnswer(ports []metal.Port, s Step, answer *metal.Port) ([]metal.Port, bool) {
	if answer == nil || s.Bulk || (s.Op != OpBond && s.Op != OpDisbond) || answer.ID != s.PortID ||
		answer.Bonded != (s.Op == OpBond) {
		return nil, false
	}
	out := slices.Clone(ports)
	for i := range out {
		if out[i].ID == s.PortID {
			out[i].Bonded = answer.Bonded
			if answer.NetworkType != "" {
				out[i].NetworkType = answer.NetworkType
			}
			return out, true
		}
	}
	return nil, false
}

// IsLayer2Port reports whether a bond is in layer 2 by its network type.
func IsLayer2Port(p metal.Port) bool {
	return strings.HasPrefix(string(p.NetworkType), "layer2")
}

// Landed reports whether a structural step shows in the ports read after it:
// a conversion in the bond's layer, a bond or disbond in some port's bonding.
// Nothing else counts, as the VLAN steps sent with it change network types
// too, and the API answers a conversion before it has landed.
func Landed(before, after []metal.Port, s Step) bool {
	find := func(ports []metal.Port, name string) (metal.Port, bool) {
		for _, p := range ports {
			if p.Name == name {
				return p, true
			}
		}
		return metal.Port{}, false
	}
	switch s.Op {
	case OpToLayer2, OpToLayer3:
		b, okB := find(before, s.Port)
		a, okA := find(after, s.Port)
		return !okB || !okA || IsLayer2Port(b) != IsLayer2Port(a)
	default:
		for _, a := range after {
			if b, ok := find(before, a.Name); !ok || b.Bonded != a.Bonded {
				return true
			}
		}
		return false
	}
}

// state is the port state the plan assumes as its steps take effect.
type state struct {
	ports   []metal.Port
	bonded  map[string]bool
	layer2  map[string]bool
	vlans   map[string]map[int]string // port -> vxlan -> VLAN ID
	members map[string][]string       // bond -> physical ports
}

func newState(ports []metal.Port, vlanIDs map[int]string) *state {
	idToVXLAN := map[string]int{}
	for vx, id := range vlanIDs {
		idToVXLAN[id] = vx
	}
	s := &state{bonded: map[string]bool{}, layer2: map[string]bool{}, vlans: map[string]map[int]string{}, members: map[string][]string{}}
	s.ports = append([]metal.Port(nil), ports...)
	sort.Slice(s.ports, func(a, b int) bool { return s.ports[a].Name < s.ports[b].Name })
	// A VLAN whose number is unknown gets a negative stand-in of its own: no
	// pool wants it, so it is unassigned, and two of them never collide.
	unknown := 0
	for _, p := range s.ports {
		s.bonded[p.Name] = p.Bonded
		s.layer2[p.Name] = IsLayer2Port(p)
		s.vlans[p.Name] = map[int]string{}
		for _, ref := range p.VLANs {
			vx := ref.VXLAN
			if vx == 0 {
				vx = idToVXLAN[ref.ID]
			}
			if vx == 0 {
				unknown--
				vx = unknown
			}
			s.vlans[p.Name][vx] = ref.ID
		}
		if p.Type == metal.PortTypePhysical && p.BondName != "" {
			s.members[p.BondName] = append(s.members[p.BondName], p.Name)
		}
	}
	return s
}

func (s *state) anyMember(bond string, bonded bool) bool {
	for _, m := range s.members[bond] {
		if s.bonded[m] == bonded {
			return true
		}
	}
	return false
}

// Steps lists the calls that take ports to d, in an order the API accepts:
// VLANs off first (a bond going back to layer 3, a bond being split and a port
// joining a bond must carry none), then bonds (bond, convert, split), then
// single ports, then VLANs on. Only what differs is listed, so a converged
// device yields nothing. vlanIDs maps VXLAN numbers to VLAN IDs for assigning.
func Steps(ports []metal.Port, d Desired, vlanIDs map[int]string) []Step {
	s := newState(ports, vlanIDs)
	var steps []Step
	steps = append(steps, s.unassignSteps(d)...)
	steps = append(steps, s.bondSteps(d)...)
	steps = append(steps, s.physicalSteps(d)...)
	steps = append(steps, s.assignSteps(d, vlanIDs)...)
	return steps
}

func (s *state) unassignSteps(d Desired) []Step {
	var steps []Step
	for _, p := range s.ports {
		w := d[p.Name]
		clearAll := false
		if p.Type == metal.PortTypeBond {
			toLayer3 := !w.Layer2 && s.layer2[p.Name]
			split := !w.Bonded && s.anyMember(p.Name, true)
			clearAll = toLayer3 || split
		} else {
			clearAll = w.Bonded && !s.bonded[p.Name]
		}
		for _, vx := range sortedVX(s.vlans[p.Name]) {
			if clearAll || !slices.Contains(w.VLANs, vx) {
				steps = append(steps, Step{Op: OpUnassign, Port: p.Name, PortID: p.ID, VXLAN: vx, VLANID: s.vlans[p.Name][vx]})
				delete(s.vlans[p.Name], vx)
			}
		}
	}
	return steps
}

func (s *state) bondSteps(d Desired) []Step {
	var steps []Step
	for _, p := range s.ports {
		if p.Type != metal.PortTypeBond {
			continue
		}
		w := d[p.Name]
		bondAll := func() {
			steps = append(steps, Step{Op: OpBond, Port: p.Name, PortID: p.ID, Bulk: true})
			for _, m := range s.members[p.Name] {
				s.bonded[m] = true
			}
		}
		switch {
		case !w.Layer2 && s.layer2[p.Name]:
			if s.anyMember(p.Name, false) {
				bondAll()
			}
			steps = append(steps, Step{Op: OpToLayer3, Port: p.Name, PortID: p.ID})
			s.layer2[p.Name] = false
		case w.Layer2 && !s.layer2[p.Name]:
			steps = append(steps, Step{Op: OpToLayer2, Port: p.Name, PortID: p.ID})
			s.layer2[p.Name] = true
		}
		switch {
		case !w.Bonded && s.anyMember(p.Name, true) && s.allMembersWant(d, p.Name, false):
			steps = append(steps, Step{Op: OpDisbond, Port: p.Name, PortID: p.ID, Bulk: true})
			for _, m := range s.members[p.Name] {
				s.bonded[m] = false
			}
		case w.Bonded && s.countMembers(p.Name, false) > 1 && s.allMembersWant(d, p.Name, true):
			bondAll()
		}
	}
	return steps
}

func (s *state) allMembersWant(d Desired, bond string, bonded bool) bool {
	for _, m := range s.members[bond] {
		if d[m].Bonded != bonded {
			return false
		}
	}
	return len(s.members[bond]) > 0
}

func (s *state) countMembers(bond string, bonded bool) int {
	n := 0
	for _, m := range s.members[bond] {
		if s.bonded[m] == bonded {
			n++
		}
	}
	return n
}

func (s *state) physicalSteps(d Desired) []Step {
	var steps []Step
	for _, p := range s.ports {
		if p.Type == metal.PortTypeBond {
			continue
		}
		w := d[p.Name]
		switch {
		case w.Bonded && !s.bonded[p.Name]:
			steps = append(steps, Step{Op: OpBond, Port: p.Name, PortID: p.ID})
			s.bonded[p.Name] = true
		case !w.Bonded && s.bonded[p.Name]:
			steps = append(steps, Step{Op: OpDisbond, Port: p.Name, PortID: p.ID})
			s.bonded[p.Name] = false
		}
	}
	return steps
}

func (s *state) assignSteps(d Desired, vlanIDs map[int]string) []Step {
	var steps []Step
	for _, p := range s.ports {
		for _, vx := range d[p.Name].VLANs {
			if _, ok := s.vlans[p.Name][vx]; !ok {
				steps = append(steps, Step{Op: OpAssign, Port: p.Name, PortID: p.ID, VXLAN: vx, VLANID: vlanIDs[vx]})
			}
		}
	}
	return steps
}

func sortedVX(m map[int]string) []int {
	out := make([]int, 0, len(m))
	for vx := range m {
		out = append(out, vx)
	}
	sort.Ints(out)
	return out
}
