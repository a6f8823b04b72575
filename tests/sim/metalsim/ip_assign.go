package metalsim

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

// addManagementIPLocked gives d one management address of the wanted kind,
// as provisioning did: the public IPv4 /31 and IPv6 /127 are blocks of the
// device itself, the private IPv4 /31 comes from the project's private /25
// in the device's metro. The device uses the second address of its /31 or
// /127 and the first is the gateway.
func (s *Simulator) addManagementIPLocked(d *device, w ipWant, at time.Time) {
	if w.family == 4 && !w.public {
		s.addPrivateIPLocked(d, at)
		return
	}
	gen, kind := s.alloc.managementPublic4, metalv1.IPRESERVATIONTYPE_PUBLIC_IPV4
	if w.family == 6 {
		gen, kind = s.alloc.managementPublic6, metalv1.IPRESERVATIONTYPE_PUBLIC_IPV6
	}
	s.objSeq++
	b := &ipBlock{
		id: s.ids.uuid(), project: d.project, metro: d.metro, kind: kind, prefix: s.freePrefixLocked(gen),
		management: true, device: d, state: "created", createdAt: at, seq: s.objSeq,
	}
	s.addBlockLocked(b)
	s.attachLocked(b, d, netip.PrefixFrom(nthAddr(b.prefix, 1), b.prefix.Bits()), true, at)
}

// addPrivateIPLocked assigns d the next /31 of its project's private block.
func (s *Simulator) addPrivateIPLocked(d *device, at time.Time) {
	b := s.privateBlockLocked(d.project, d.metro, at)
	first := addV4(b.prefix.Addr(), b.next)
	b.next += 2
	s.attachLocked(b, d, netip.PrefixFrom(first.Next(), 31), true, at)
}

// privateBlockLocked returns the oldest private /25 of p in metro m with a
// /31 left, carving a new one when every block is used up ("we'll
// automatically replenish your supply with additional /25s").
func (s *Simulator) privateBlockLocked(p *project, m metroInfo, at time.Time) *ipBlock {
	var found *ipBlock
	size := uint32(1) << (32 - privateBlockBits)
	for _, b := range p.private {
		if b.metro.code == m.code && b.next < size && (found == nil || b.seq < found.seq) {
			found = b
		}
	}
	if found != nil {
		return found
	}
	s.objSeq++
	b := &ipBlock{
		id: s.ids.uuid(), project: p, metro: m, kind: metalv1.IPRESERVATIONTYPE_PRIVATE_IPV4,
		prefix: s.freePrefixLocked(s.alloc.privateBlock), management: true, state: "created",
		createdAt: at, seq: s.objSeq,
	}
	s.addBlockLocked(b)
	p.private = append(p.private, b)
	return b
}

// attachLocked records an assignment of prefix (from block b) to d.
func (s *Simulator) attachLocked(b *ipBlock, d *device, prefix netip.Prefix, management bool, at time.Time) *ipAssignment {
	a := &ipAssignment{id: s.ids.uuid(), block: b, device: d, prefix: prefix, management: management, createdAt: at}
	b.assigned = append(b.assigned, a)
	d.ips = append(d.ips, a)
	s.assignments[a.id] = a
	s.routersChangedLocked()
	return a
}

// unassignLocked removes an assignment; a device-level management block
// goes with it, a project block stays.
func (s *Simulator) unassignLocked(a *ipAssignment) {
	a.device.ips = slices.DeleteFunc(a.device.ips, func(x *ipAssignment) bool { return x == a })
	a.block.assigned = slices.DeleteFunc(a.block.assigned, func(x *ipAssignment) bool { return x == a })
	delete(s.assignments, a.id)
	if a.block.management && a.block.device != nil {
		s.removeBlockLocked(a.block)
	}
	s.routersChangedLocked()
}

func (s *Simulator) createIPAssignment(c *call) (reply, error) {
	d, err := c.deviceLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	var in metalv1.IPAssignmentInput
	if err := c.decode(&in); err != nil {
		return reply{}, err
	}
	prefix, err := parseAssignAddress(in.Address)
	if err != nil {
		return reply{}, errInvalid(fmt.Sprintf("Address %s is not valid", in.Address))
	}
	b, err := s.assignableBlockLocked(d, prefix)
	if err != nil {
		return reply{}, err
	}
	a := s.attachLocked(b, d, prefix, false, c.now)
	s.networkChangedLocked(d, c.now, EventIPAssigned, fmt.Sprintf("%s was assigned to {{ device }}", prefix))
	return jsonReply(201, s.renderAssignment(a))
}

// assignableBlockLocked finds the project reservation containing prefix and
// checks that it may be assigned to d.
func (s *Simulator) assignableBlockLocked(d *device, prefix netip.Prefix) (*ipBlock, error) {
	var block *ipBlock
	for _, b := range d.project.elastic.all() {
		if b.prefix.Contains(prefix.Addr()) && prefix.Bits() >= b.prefix.Bits() {
			block = b
			break
		}
	}
	switch {
	case block == nil:
		// Observed wording (packngo #183, after the reservation was gone).
		return nil, errInvalid("Address is not reserved for the project")
	case block.state != "created":
		return nil, errInvalid("The reservation is still pending approval")
	case block.metro.code != "" && block.metro.code != d.metro.code:
		return nil, errInvalid(fmt.Sprintf("Addresses of metro %s cannot be assigned to a device in metro %s", block.metro.code, d.metro.code))
	case d.port("bond0") == nil || d.port("bond0").layer2:
		return nil, errConflict("Cannot assign an IP address to a device in Layer 2 mode")
	}
	for _, a := range block.assigned {
		if a.prefix.Overlaps(prefix) {
			// Observed wording of an address assigned elsewhere (OpenNebula
			// #5345). The API validated the address for uniqueness, so the
			// same device gets the same answer (inferred).
			return nil, errInvalid("Address has already been taken")
		}
	}
	return block, nil
}

func (s *Simulator) findIPAssignments(c *call) (reply, error) {
	d, err := c.deviceLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	list := metalv1.IPAssignmentList{IpAddresses: []metalv1.IPAssignment{}}
	for _, a := range d.ips {
		list.IpAddresses = append(list.IpAddresses, s.renderAssignment(a))
	}
	return jsonReply(200, list)
}
