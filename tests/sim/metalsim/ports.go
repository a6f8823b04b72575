package metalsim

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

func (s *Simulator) findPortByID(c *call) (reply, error) {
	p, err := c.portLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	return s.portReply(c, p)
}

func (s *Simulator) portReply(c *call, p *port) (reply, error) {
	in := c.includes()
	return jsonReply(200, s.renderPort(p, vlanDetail(in)))
}

// mutablePortLocked returns the port of a request that changes it.
func (c *call) mutablePortLocked(networkChange bool) (*port, error) {
	p, err := c.portLocked(c.pathValue("id"))
	if err != nil {
		return nil, err
	}
	switch {
	case p.dev.state == metalv1.DEVICESTATE_DEPROVISIONING:
		return nil, errConflict("Cannot change the network of a device while it is deprovisioning")
	case networkChange && p.dev.obj.GetNetworkFrozen():
		return nil, errConflict("Network changes are frozen for this device")
	}
	return p, nil
}

func (s *Simulator) networkChangedLocked(d *device, at time.Time, eventType, body string) {
	s.recordEventLocked(d, at, eventType, "success", body)
	s.notifyLocked(DeviceNetworkChanged, d, at, nil)
}

func (s *Simulator) bondPort(c *call) (reply, error) {
	p, err := c.mutablePortLocked(true)
	if err != nil {
		return reply{}, err
	}
	bulk, err := c.boolQuery("bulk_enable")
	if err != nil {
		return reply{}, err
	}
	targets := bondTargets(p, bulk)
	for _, t := range targets {
		if !t.bonded && len(t.vlans) > 0 {
			return reply{}, errConflict("Port %s has VLANs assigned, unassign them before bonding it", t.name)
		}
	}
	var changed []string
	for _, t := range targets {
		if !t.bonded {
			t.bonded = true
			changed = append(changed, t.name)
		}
	}
	if len(changed) > 0 {
		s.networkChangedLocked(p.dev, c.now, EventPortBonded, fmt.Sprintf("Ports %v of {{ device }} were bonded", changed))
	}
	return s.portReply(c, p)
}

// bondTargets are the physical ports a bond/disbond acts on: every member
// for a bond port or with bulk, else the port itself.
func bondTargets(p *port, bulk bool) []*port {
	switch {
	case p.isBond():
		return p.members
	case bulk:
		return p.bond.members
	default:
		return []*port{p}
	}
}

func (s *Simulator) disbondPort(c *call) (reply, error) {
	p, err := c.mutablePortLocked(true)
	if err != nil {
		return reply{}, err
	}
	bulk, err := c.boolQuery("bulk_disable")
	if err != nil {
		return reply{}, err
	}
	targets := bondTargets(p, bulk)
	bond := p
	if !p.isBond() {
		bond = p.bond
	}
	left := 0
	for _, m := range bond.members {
		if m.bonded && !slices.Contains(targets, m) {
			left++
		}
	}
	if !bond.layer2 && len(bond.vlans) > 0 {
		// Bonding of a hybrid-bonded port may change only once its VLANs are
		// gone (packngo #231).
		return reply{}, errConflict("Unassign the VLANs of %s before changing its bonding", bond.name)
	}
	// Disbonding every port of a layer-3 bond is accepted: metal-cli's
	// port convert disbonds before it converts, and its end-to-end tests
	// ran that against the live API. The bond keeps its layer and
	// addresses until it is converted.
	if left == 0 && len(bond.vlans) > 0 {
		return reply{}, errConflict("%s has VLANs assigned, unassign them before disbonding it", bond.name)
	}
	var changed []string
	for _, t := range targets {
		if t.bonded {
			t.bonded = false
			changed = append(changed, t.name)
		}
	}
	if len(changed) > 0 {
		s.networkChangedLocked(p.dev, c.now, EventPortDisbonded, fmt.Sprintf("Ports %v of {{ device }} were disbonded", changed))
	}
	return s.portReply(c, p)
}

// conversionPortLocked checks what both layer conversions require.
func (c *call) conversionPortLocked() (*port, error) {
	p, err := c.mutablePortLocked(true)
	if err != nil {
		return nil, err
	}
	if !p.isBond() {
		return nil, errConflict("Only bond ports can be converted, %s is not a bond", p.name)
	}
	if p.converting {
		return nil, errConflict("A conversion of %s is already in progress", p.name)
	}
	return p, nil
}

func (s *Simulator) convertLayer2(c *call) (reply, error) {
	p, err := c.conversionPortLocked()
	if err != nil {
		return reply{}, err
	}
	if p.layer2 {
		// terraform-provider-equinix #143.
		return reply{}, errConflict("%s is already configured for Layer 2", p.name)
	}
	s.convertLocked(p, c.now, func(at time.Time) {
		p.layer2 = true
		if p.name == "bond0" {
			for _, a := range slices.Clone(p.dev.ips) {
				s.unassignLocked(a)
			}
		}
		s.networkChangedLocked(p.dev, at, EventPortLayer2, p.name+" of {{ device }} was converted to Layer 2")
	})
	return s.portReply(c, p)
}

func (s *Simulator) convertLayer3(c *call) (reply, error) {
	p, err := c.conversionPortLocked()
	if err != nil {
		return reply{}, err
	}
	if !p.layer2 {
		// terraform-provider-packet #224.
		return reply{}, errConflict("%s is already layer3", p.name)
	}
	for _, q := range append([]*port{p}, p.members...) {
		if len(q.vlans) > 0 {
			return reply{}, errConflict("VLANs must be unassigned from %s before converting %s to Layer 3", q.name, p.name)
		}
	}
	wants, err := convertLayer3IPs(c)
	if err != nil {
		return reply{}, err
	}
	s.convertLocked(p, c.now, func(at time.Time) {
		p.layer2 = false
		// "Our API will automatically bond the network interfaces and assign
		// a new IP address" (Equinix layer-2 documentation).
		for _, m := range p.members {
			m.bonded = true
		}
		if p.name == "bond0" && !hasManagementIPs(p.dev) {
			for _, w := range wants {
				s.addManagementIPLocked(p.dev, w, at)
			}
		}
		s.networkChangedLocked(p.dev, at, EventPortLayer3, p.name+" of {{ device }} was converted to Layer 3")
	})
	return s.portReply(c, p)
}

func convertLayer3IPs(c *call) ([]ipWant, error) {
	var in metalv1.PortConvertLayer3Input
	if len(c.body) > 0 {
		if err := c.decode(&in); err != nil {
			return nil, err
		}
	}
	if len(in.RequestIps) == 0 {
		return defaultIPs, nil
	}
	var out []ipWant
	for _, r := range in.RequestIps {
		w := ipWant{family: int(r.GetAddressFamily()), public: r.GetPublic()}
		if w.family != 4 && w.family != 6 {
			return nil, errInvalid(fmt.Sprintf("address_family %d is not valid", w.family))
		}
		if w.family == 6 && !w.public {
			return nil, errInvalid("Private IPv6 addresses are not supported")
		}
		out = append(out, w)
	}
	return out, nil
}

// convertLocked applies a conversion now or, with a PortConversion delay,
// later: the API answered before the change landed (packngo #134, #203).
func (s *Simulator) convertLocked(p *port, now time.Time, apply func(at time.Time)) {
	if s.timings.PortConversion <= 0 {
		apply(now)
		return
	}
	p.converting = true
	s.scheduleLocked(now, s.timings.PortConversion, func(at time.Time) {
		if p.dev.gone {
			return
		}
		p.converting = false
		apply(at)
	})
}

func hasManagementIPs(d *device) bool {
	for _, a := range d.ips {
		if a.management {
			return true
		}
	}
	return false
}

func (s *Simulator) assignPort(c *call) (reply, error) {
	p, v, err := s.portAndVLAN(c)
	if err != nil {
		return reply{}, err
	}
	if err := s.assignVLANLocked(p, v, c.now); err != nil {
		return reply{}, err
	}
	return s.portReply(c, p)
}

func (s *Simulator) unassignPort(c *call) (reply, error) {
	p, v, err := s.portAndVLAN(c)
	if err != nil {
		return reply{}, err
	}
	if err := s.unassignVLANLocked(p, v, c.now); err != nil {
		return reply{}, err
	}
	return s.portReply(c, p)
}

func (s *Simulator) portAndVLAN(c *call) (*port, *vlan, error) {
	p, err := c.mutablePortLocked(false)
	if err != nil {
		return nil, nil, err
	}
	var in metalv1.PortAssignInput
	if err := c.decode(&in); err != nil {
		return nil, nil, err
	}
	if in.GetVnid() == "" {
		return nil, nil, errInvalid("vnid is required")
	}
	v, err := s.resolveVLANLocked(p.dev, in.GetVnid())
	if err != nil {
		return nil, nil, err
	}
	return p, v, nil
}

// resolveVLANLocked finds a VLAN by UUID or by vxlan within the device's
// project and metro, as the assign endpoints accept both.
func (s *Simulator) resolveVLANLocked(d *device, ref string) (*vlan, error) {
	if v, ok := s.vlans[ref]; ok && v.project == d.project {
		return v, nil
	}
	if n, err := strconv.Atoi(ref); err == nil {
		for _, v := range s.vlans {
			if v.project == d.project && v.metro.code == d.metro.code && int(v.vxlan()) == n {
				return v, nil
			}
		}
		return nil, errInvalid(fmt.Sprintf("Virtual network %d not found in metro %s", n, d.metro.code))
	}
	return nil, errStatus(404, "Virtual network %s not found", ref)
}

func (s *Simulator) assignVLANLocked(p *port, v *vlan, at time.Time) error {
	switch {
	case !p.isBond() && p.bonded:
		return errConflict("Port %s is bonded, assign the virtual network to %s instead", p.name, p.bond.name)
	case p.isBond() && !anyBonded(p):
		return errConflict("%s is not bonded, assign the virtual network to its ports instead", p.name)
	case v.metro.code != p.dev.metro.code:
		return errConflict("Virtual network %d is in metro %s but the device is in %s", v.vxlan(), v.metro.code, p.dev.metro.code)
	case slices.Contains(p.vlans, v):
		return errConflict("Virtual network %d is already assigned to %s", v.vxlan(), p.name)
	}
	p.vlans = append(p.vlans, v)
	v.attach(p)
	s.networkChangedLocked(p.dev, at, EventVLANAssigned,
		fmt.Sprintf("Virtual network %d was assigned to %s of {{ device }}", v.vxlan(), p.name))
	return nil
}

func (s *Simulator) unassignVLANLocked(p *port, v *vlan, at time.Time) error {
	if !slices.Contains(p.vlans, v) {
		return errConflict("Virtual network %d is not assigned to %s", v.vxlan(), p.name)
	}
	p.vlans = slices.DeleteFunc(p.vlans, func(x *vlan) bool { return x == v })
	if p.native == v {
		p.native = nil
	}
	v.detach(p)
	s.networkChangedLocked(p.dev, at, EventVLANUnassigned,
		fmt.Sprintf("Virtual network %d was unassigned from %s of {{ device }}", v.vxlan(), p.name))
	return nil
}

func (s *Simulator) setNativeLocked(p *port, v *vlan, at time.Time) error {
	switch {
	case !slices.Contains(p.vlans, v):
		return errConflict("Virtual network %d must be assigned to %s before it can be its native VLAN", v.vxlan(), p.name)
	case p.isBond() && !p.layer2:
		return errConflict("A native VLAN is not supported on %s in Layer 3 mode", p.name)
	case len(p.vlans) < 2:
		return errConflict("A native VLAN needs at least two virtual networks on %s", p.name)
	}
	p.native = v
	s.networkChangedLocked(p.dev, at, EventNativeVLAN,
		fmt.Sprintf("Virtual network %d is now the native VLAN of %s of {{ device }}", v.vxlan(), p.name))
	return nil
}

func (s *Simulator) assignNativeVlan(c *call) (reply, error) {
	p, err := c.mutablePortLocked(false)
	if err != nil {
		return reply{}, err
	}
	vnid := c.query("vnid")
	if vnid == "" {
		return reply{}, errInvalid("vnid is required")
	}
	v, err := s.resolveVLANLocked(p.dev, vnid)
	if err != nil {
		return reply{}, err
	}
	if err := s.setNativeLocked(p, v, c.now); err != nil {
		return reply{}, err
	}
	return s.portReply(c, p)
}

func (s *Simulator) deleteNativeVlan(c *call) (reply, error) {
	p, err := c.mutablePortLocked(false)
	if err != nil {
		return reply{}, err
	}
	if p.native != nil {
		vx := p.native.vxlan()
		p.native = nil
		s.networkChangedLocked(p.dev, c.now, EventNativeVLANGone,
			fmt.Sprintf("Virtual network %d is no longer the native VLAN of %s of {{ device }}", vx, p.name))
	}
	return s.portReply(c, p)
}
