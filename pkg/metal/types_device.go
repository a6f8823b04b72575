package metal

import (
	"slices"
	"time"
)

// Device is a bare-metal server. Userdata is deliberately absent: it carries
// the cluster join token, and leaving it out of the model keeps it out of
// logs, events and status.
type Device struct {
	ID       string
	ShortID  string
	Hostname string
	State    DeviceState
	Tags     []string
	// ProjectID is the project the device belongs to, when the API said
	// (it names the project even as a bare reference).
	ProjectID string
	// Plan is the plan slug, e.g. c3.small.x86.
	Plan string
	// Metro is the lowercase metro code, e.g. da.
	Metro string
	// Facility is the lowercase code of the data centre, e.g. da11.
	Facility string
	// PlanDetails is the plan with its hardware specs when the answer
	// carried the plan in full (a plain read does); nil when it carried a
	// reference only (brief lists).
	PlanDetails     *Plan
	BillingCycle    string
	OperatingSystem string
	IPXEScriptURL   string
	AlwaysPXE       bool
	Locked          bool
	// HardwareReservationID is empty for on-demand devices.
	HardwareReservationID string
	Spot                  bool
	// TerminationTime is when the platform will reclaim the device (a spot
	// device, or any device given a termination time); zero when none.
	TerminationTime time.Time
	CreatedAt       time.Time
	UpdatedAt       time.Time
	// ProvisioningPercentage is only reported while provisioning.
	ProvisioningPercentage float64
	Ports                  []Port
	IPAddresses            []IPAddress
}

// Port is a physical port (eth0, eth1, ...) or a bond (bond0, bond1).
type Port struct {
	ID          string
	Name        string
	Type        PortType
	NetworkType NetworkType
	// MAC is set on physical ports only.
	MAC string
	// Bonded is true for a physical port in its bond and for an active bond.
	Bonded bool
	// BondID and BondName name the bond a physical port belongs to.
	BondID           string
	BondName         string
	DisbondSupported bool
	VLANs            []VLANRef
	// NativeVLANID is the ID of the native (untagged) VLAN, if any.
	NativeVLANID string
}

// VLANRef is a VLAN attached to a port. VXLAN is 0 when the API answered
// with a reference only.
type VLANRef struct {
	ID    string
	VXLAN int
}

// DeepCopy copies the device with its ports, VLAN references, addresses and
// tags, so a cached device can be handed out without sharing slices.
func (d *Device) DeepCopy() *Device {
	out := *d
	out.Tags = append([]string(nil), d.Tags...)
	out.IPAddresses = append([]IPAddress(nil), d.IPAddresses...)
	out.Ports = make([]Port, len(d.Ports))
	for i, p := range d.Ports {
		p.VLANs = append([]VLANRef(nil), p.VLANs...)
		out.Ports[i] = p
	}
	if d.Ports == nil {
		out.Ports = nil
	}
	if d.PlanDetails != nil {
		p := d.PlanDetails.deepCopy()
		out.PlanDetails = &p
	}
	return &out
}

// PublicIPv4 returns the device's public IPv4 address, preferring the
// management address, or "" when it has none (layer-2 modes).
func (d *Device) PublicIPv4() string { return d.pickIPv4(true) }

// PrivateIPv4 returns the device's private IPv4 address, preferring the
// management address, or "" when it has none.
func (d *Device) PrivateIPv4() string { return d.pickIPv4(false) }

func (d *Device) pickIPv4(public bool) string {
	found := ""
	for _, ip := range d.IPAddresses {
		if ip.AddressFamily != 4 || ip.Public != public {
			continue
		}
		if ip.Management {
			return ip.Address
		}
		if found == "" {
			found = ip.Address
		}
	}
	return found
}

// MACs maps each physical port name to its MAC address. Ports whose MAC is
// not (yet) known are left out.
func (d *Device) MACs() map[string]string {
	macs := make(map[string]string, len(d.Ports))
	for _, p := range d.Ports {
		if p.Type == PortTypePhysical && p.MAC != "" {
			macs[p.Name] = p.MAC
		}
	}
	return macs
}

// Port returns the port with the given name (eth0, bond0, ...).
func (d *Device) Port(name string) (Port, bool) {
	for _, p := range d.Ports {
		if p.Name == name {
			return p, true
		}
	}
	return Port{}, false
}

// HasTag reports whether the device carries tag.
func (d *Device) HasTag(tag string) bool {
	return slices.Contains(d.Tags, tag)
}

// NetworkType derives the device's network type from its ports, the way the
// Metal console and packngo do: every port bonded gives layer3 when the device
// has management addresses (hybrid-bonded when VLANs ride on that layer-3
// bond, as the API reports on bond0 itself) and layer2-bonded otherwise;
// bonds up with some physical port out of its bond gives hybrid; anything
// else is layer2-individual. It returns "" when the device has no ports.
func (d *Device) NetworkType() NetworkType {
	if len(d.Ports) == 0 {
		return ""
	}
	bondsBonded, physBonded, bondVLANs := true, true, false
	for _, p := range d.Ports {
		switch p.Type {
		case PortTypeBond:
			bondsBonded = bondsBonded && p.Bonded
			bondVLANs = bondVLANs || len(p.VLANs) > 0
		case PortTypePhysical:
			physBonded = physBonded && p.Bonded
		}
	}
	switch {
	case bondsBonded && physBonded && d.hasManagementIP() && bondVLANs:
		return NetworkTypeHybridBonded
	case bondsBonded && physBonded && d.hasManagementIP():
		return NetworkTypeLayer3
	case bondsBonded && physBonded:
		return NetworkTypeLayer2Bonded
	case bondsBonded:
		return NetworkTypeHybrid
	default:
		return NetworkTypeLayer2Individual
	}
}

func (d *Device) hasManagementIP() bool {
	for _, ip := range d.IPAddresses {
		if ip.Management {
			return true
		}
	}
	return false
}

// UnresolvedVLANs lists the IDs of the VLANs on the device's ports whose
// VXLAN number the read did not carry.
func (d *Device) UnresolvedVLANs() []string {
	var out []string
	for _, p := range d.Ports {
		for _, v := range p.VLANs {
			if v.VXLAN == 0 && v.ID != "" {
				out = append(out, v.ID)
			}
		}
	}
	return out
}

// HasVLAN reports whether the VLAN (by ID or by VXLAN when known) is on the port.
func (p *Port) HasVLAN(id string, vxlan int) bool {
	for _, v := range p.VLANs {
		if (id != "" && v.ID == id) || (vxlan != 0 && v.VXLAN == vxlan) {
			return true
		}
	}
	return false
}
