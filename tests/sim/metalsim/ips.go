package metalsim

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"net/netip"
	"slices"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

const (
	maxReservationQuantity = 256
	// approvalQuantity is the largest request granted without a manual
	// approval (a /30 for real was often the limit without one).
	approvalQuantity = 4
)

func family(p netip.Prefix) int32 {
	if p.Addr().Is4() {
		return 4
	}
	return 6
}

func (s *Simulator) renderAssignment(a *ipAssignment) metalv1.IPAssignment {
	b := a.block
	out := metalv1.IPAssignment{
		Id:            ptr(a.id),
		Href:          ptr(ipHref(a.id)),
		Address:       ptr(a.prefix.Addr().String()),
		AddressFamily: ptr(family(a.prefix)),
		Cidr:          ptr(int32(a.prefix.Bits())),
		Gateway:       ptr(a.prefix.Masked().Addr().String()),
		Netmask:       ptr(netmask(a.prefix)),
		Network:       ptr(a.prefix.Masked().Addr().String()),
		Public:        ptr(b.kind != metalv1.IPRESERVATIONTYPE_PRIVATE_IPV4),
		Management:    ptr(a.management),
		Manageable:    ptr(true),
		GlobalIp:      ptr(b.kind == metalv1.IPRESERVATIONTYPE_GLOBAL_IPV4),
		Enabled:       ptr(true),
		CreatedAt:     ptr(a.createdAt),
		AssignedTo:    &metalv1.Href{Href: deviceHref(a.device.id())},
		State:         ptr(metalv1.IPASSIGNMENTSTATE_ACTIVE),
		Type:          ptr(metalv1.IPASSIGNMENTTYPE_IP_ASSIGNMENT),
		ParentBlock: &metalv1.ParentBlock{
			Href:    ptr(ipHref(b.id)),
			Network: ptr(b.prefix.Masked().Addr().String()),
			Netmask: ptr(netmask(b.prefix)),
			Cidr:    ptr(int32(b.prefix.Bits())),
		},
	}
	if b.metro.code != "" {
		m := b.metro
		out.Metro = &metalv1.IPAssignmentMetro{Id: ptr(m.id), Code: ptr(m.code), Name: ptr(m.name), Country: ptr(m.country)}
	}
	return out
}

// renderReservation always sets type (the SDK's oneOf decoding needs it)
// and never vrf.
func (s *Simulator) renderReservation(b *ipBlock, withAssignments bool) metalv1.IPReservation {
	network := b.prefix.Masked().Addr().String()
	elastic := !b.management
	out := metalv1.IPReservation{
		Id:            ptr(b.id),
		Href:          ptr(ipHref(b.id)),
		Type:          b.kind,
		Address:       ptr(network),
		AddressFamily: ptr(family(b.prefix)),
		Cidr:          ptr(int32(b.prefix.Bits())),
		Netmask:       ptr(netmask(b.prefix)),
		Network:       ptr(network),
		Gateway:       ptr(network),
		Public:        ptr(b.kind != metalv1.IPRESERVATIONTYPE_PRIVATE_IPV4),
		Management:    ptr(b.management),
		Manageable:    ptr(true),
		GlobalIp:      ptr(b.kind == metalv1.IPRESERVATIONTYPE_GLOBAL_IPV4),
		Addon:         ptr(elastic),
		Bill:          ptr(elastic),
		Enabled:       ptr(true),
		State:         ptr(b.state),
		Tags:          append([]string{}, b.tags...),
		CreatedAt:     ptr(b.createdAt),
		Project:       &metalv1.Project{Href: ptr(projectHref(b.project.id))},
		ProjectLite:   &metalv1.Href{Href: projectHref(b.project.id)},
		Assignments:   []metalv1.IPAssignment{},
	}
	if b.details != "" {
		out.Details = ptr(b.details)
	}
	if len(b.customdata) > 0 {
		out.Customdata = copyMap(b.customdata)
	}
	if b.metro.code != "" {
		m := b.metro
		out.Metro = &metalv1.IPReservationMetro{Id: ptr(m.id), Code: ptr(m.code), Name: ptr(m.name), Country: ptr(m.country)}
	}
	for _, a := range b.assigned {
		if withAssignments {
			out.Assignments = append(out.Assignments, s.renderAssignment(a))
		} else {
			out.Assignments = append(out.Assignments, metalv1.IPAssignment{Href: ptr(ipHref(a.id))})
		}
	}
	return out
}

func (s *Simulator) requestIPReservation(c *call) (reply, error) {
	p, err := c.projectLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(c.body, &raw); err == nil {
		if _, ok := raw["vrf_id"]; ok {
			return reply{}, errInvalid("VRF IP reservations are not supported")
		}
	}
	var in metalv1.IPReservationRequestInput
	if err := c.decode(&in); err != nil {
		return reply{}, err
	}
	b, err := s.newReservationLocked(p, in, c.now)
	if err != nil {
		return reply{}, err
	}
	res := s.renderReservation(b, c.includes().has("assignments"))
	return jsonReply(201, metalv1.RequestIPReservation201Response{IPReservation: &res})
}

func (s *Simulator) newReservationLocked(p *project, in metalv1.IPReservationRequestInput, now time.Time) (*ipBlock, error) {
	kind := metalv1.IPReservationType(in.Type)
	global := kind == metalv1.IPRESERVATIONTYPE_GLOBAL_IPV4
	if kind != metalv1.IPRESERVATIONTYPE_PUBLIC_IPV4 && !global {
		return nil, errInvalid(fmt.Sprintf("Type %s cannot be requested, use public_ipv4 or global_ipv4", in.Type))
	}
	q := int(in.Quantity)
	if q < 1 || q > maxReservationQuantity || bits.OnesCount(uint(q)) != 1 {
		return nil, errInvalid(fmt.Sprintf("Quantity must be a power of 2 between 1 and %d", maxReservationQuantity))
	}
	var m metroInfo
	if !global {
		var ok bool
		if m, ok = findMetro(in.GetMetro()); !ok {
			return nil, errInvalid(fmt.Sprintf("Metro %s is not valid", in.GetMetro()))
		}
	}
	state := "created"
	if q > approvalQuantity {
		if in.GetFailOnApprovalRequired() {
			return nil, errInvalid(fmt.Sprintf("A request for %d addresses requires approval", q))
		}
		state = "pending"
	}
	s.objSeq++
	b := &ipBlock{
		id: s.ids.uuid(), project: p, metro: m, kind: kind, prefix: s.freePrefixLocked(func() netip.Prefix { return s.alloc.elastic(q, global) }),
		tags: append([]string{}, in.Tags...), details: in.GetDetails(), customdata: copyMap(in.Customdata),
		state: state, createdAt: now, seq: s.objSeq,
	}
	s.addBlockLocked(b)
	s.routersChangedLocked()
	return b, nil
}

func (s *Simulator) findIPReservations(c *call) (reply, error) {
	p, err := c.projectLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	pr := c.pagination()
	types := c.list("types")
	blocks := p.blocks.all()
	if len(types) > 0 {
		var kept []*ipBlock
		for _, b := range blocks {
			if slices.Contains(types, string(b.kind)) {
				kept = append(kept, b)
			}
		}
		blocks = kept
	}
	lo, hi := pr.bounds(len(blocks))
	withAssignments := c.includes().has("assignments")
	list := metalv1.IPReservationList{IpAddresses: []metalv1.IPReservationListIpAddressesInner{}, Meta: c.meta(len(blocks), pr)}
	for _, b := range blocks[lo:hi] {
		r := s.renderReservation(b, withAssignments)
		list.IpAddresses = append(list.IpAddresses, metalv1.IPReservationListIpAddressesInner{IPReservation: &r})
	}
	return jsonReply(200, list)
}

func (s *Simulator) findIPAddressByID(c *call) (reply, error) {
	id := c.pathValue("id")
	if a, ok := s.assignments[id]; ok {
		if !c.projects[a.block.project.id] {
			return reply{}, c.forbidden("You are not authorized to view this IP address")
		}
		return jsonReply(200, s.renderAssignment(a))
	}
	b, ok := s.blocks[id]
	if !ok {
		return reply{}, errNotFound()
	}
	if !c.projects[b.project.id] {
		return reply{}, c.forbidden("You are not authorized to view this IP address")
	}
	return jsonReply(200, s.renderReservation(b, c.includes().has("assignments")))
}

func (s *Simulator) deleteIPAddress(c *call) (reply, error) {
	id := c.pathValue("id")
	if a, ok := s.assignments[id]; ok {
		if !c.projects[a.block.project.id] {
			return reply{}, c.forbidden("You are not authorized to view this IP address")
		}
		d := a.device
		addr := a.prefix.Addr()
		s.unassignLocked(a)
		s.networkChangedLocked(d, c.now, EventIPUnassigned, fmt.Sprintf("%s was unassigned from {{ device }}", addr))
		return emptyReply(204)
	}
	b, ok := s.blocks[id]
	if !ok {
		return reply{}, errNotFound()
	}
	if !c.projects[b.project.id] {
		return reply{}, c.forbidden("You are not authorized to view this IP address")
	}
	if b.management {
		return reply{}, errConflict("A management block cannot be released")
	}
	// The API released an assigned reservation too, taking its assignments
	// with it (packngo #183: an EIP deleted by its reservation ID while
	// assigned was gone for good); the spec lists no 422 here.
	for _, a := range slices.Clone(b.assigned) {
		d := a.device
		s.unassignLocked(a)
		s.networkChangedLocked(d, c.now, EventIPUnassigned, fmt.Sprintf("%s was unassigned from {{ device }}", a.prefix.Addr()))
	}
	s.removeBlockLocked(b)
	s.routersChangedLocked()
	return emptyReply(204)
}
