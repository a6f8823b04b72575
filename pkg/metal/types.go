package metal

import (
	"fmt"
	"io"
	"strconv"
	"time"
)

// DeviceState is the lifecycle state the API reports for a device.
type DeviceState string

// Device states, as the API spells them.
const (
	DeviceStateQueued         DeviceState = "queued"
	DeviceStateProvisioning   DeviceState = "provisioning"
	DeviceStateDeprovisioning DeviceState = "deprovisioning"
	DeviceStateReinstalling   DeviceState = "reinstalling"
	DeviceStateActive         DeviceState = "active"
	DeviceStateInactive       DeviceState = "inactive"
	DeviceStateFailed         DeviceState = "failed"
	DeviceStatePoweringOn     DeviceState = "powering_on"
	DeviceStatePoweringOff    DeviceState = "powering_off"
	DeviceStateDeleted        DeviceState = "deleted"
)

// PortType tells a physical port from a bond.
type PortType string

// Port types.
const (
	PortTypePhysical PortType = "NetworkPort"
	PortTypeBond     PortType = "NetworkBondPort"
)

// NetworkType is the layer-2/layer-3 mode of a port or of a whole device.
type NetworkType string

// Network types.
const (
	NetworkTypeLayer3           NetworkType = "layer3"
	NetworkTypeHybrid           NetworkType = "hybrid"
	NetworkTypeHybridBonded     NetworkType = "hybrid-bonded"
	NetworkTypeLayer2Bonded     NetworkType = "layer2-bonded"
	NetworkTypeLayer2Individual NetworkType = "layer2-individual"
)

// Billing cycles accepted by CreateDeviceRequest.BillingCycle.
const (
	BillingHourly  = "hourly"
	BillingDaily   = "daily"
	BillingMonthly = "monthly"
	BillingYearly  = "yearly"
)

// OperatingSystemCustomIPXE boots the device from IPXEScriptURL.
const OperatingSystemCustomIPXE = "custom_ipxe"

// Sensitive is a string that never prints: fmt verbs show "<redacted>" (or
// nothing when empty), so a request or model logged with %v or %+v cannot
// leak the join token in userdata or a BGP password. Convert with string(s)
// to read it.
type Sensitive string

// String implements fmt.Stringer.
func (s Sensitive) String() string {
	if s == "" {
		return ""
	}
	return "<redacted>"
}

// GoString implements fmt.GoStringer for %#v.
func (s Sensitive) GoString() string { return strconv.Quote(s.String()) }

// Format implements fmt.Formatter: without it a verb that does not suit a
// string (%d) would print the raw value.
func (s Sensitive) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, s.GoString())
		return
	}
	_, _ = io.WriteString(f, s.String())
}

// Device is a bare-metal server. Userdata is deliberately absent: it carries
// the cluster join token, and leaving it out of the model keeps it out of
// logs, events and status.
type Device struct {
	ID       string
	ShortID  string
	Hostname string
	State    DeviceState
	Tags     []string
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

// IPAddress is an address assigned to a device (an IP assignment).
type IPAddress struct {
	ID      string
	Address string
	Network string
	Netmask string
	Gateway string
	CIDR    int
	// AddressFamily is 4 or 6.
	AddressFamily int
	Public        bool
	// Management is true for the addresses the device got at provisioning.
	Management bool
	// DeviceID is the device the address is assigned to, when the API says so.
	DeviceID string
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
	for _, t := range d.Tags {
		if t == tag {
			return true
		}
	}
	return false
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

// VirtualNetwork is a project VLAN in one metro.
type VirtualNetwork struct {
	ID          string
	VXLAN       int
	Metro       string
	Description string
	Tags        []string
	// AssignedDevices counts the devices with a port in this VLAN (the API's
	// instances); a VLAN can only be deleted once it is zero.
	AssignedDevices int
	CreatedAt       time.Time
}

// Event is one entry of a device's event log. Type and State are free strings.
type Event struct {
	ID string
	// DeviceID is the device the event is about (from its relationships),
	// or "" for an event about something else.
	DeviceID     string
	Type         string
	State        string
	Body         string
	Interpolated string
	CreatedAt    time.Time
}

// ListEventsOptions bounds ListProjectEvents.
type ListEventsOptions struct {
	// Since is the oldest time of interest; zero means the whole log.
	Since time.Time
}

// IP reservation types.
const (
	IPReservationPublicIPv4  = "public_ipv4"
	IPReservationGlobalIPv4  = "global_ipv4"
	IPReservationPrivateIPv4 = "private_ipv4"
	IPReservationPublicIPv6  = "public_ipv6"
)

// IPReservation is a reserved block of addresses, such as an Elastic IP.
type IPReservation struct {
	ID            string
	Type          string
	Address       string
	Network       string
	Netmask       string
	Gateway       string
	CIDR          int
	AddressFamily int
	Public        bool
	Management    bool
	// State is pending, created or denied.
	State string
	Metro string
	Tags  []string
	// Assignments are the device assignments of addresses in this block.
	Assignments []IPAddress
	CreatedAt   time.Time
}

// BGP deployment types.
const (
	BGPDeploymentLocal  = "local"
	BGPDeploymentGlobal = "global"
)

// BGPConfig is the project's BGP configuration. A project without one has an
// empty ID.
type BGPConfig struct {
	ID             string
	ASN            int64
	DeploymentType string
	// Status is requested, enabled or disabled.
	Status    string
	MaxPrefix int
}

// Enabled reports whether the project has a usable BGP configuration.
func (c *BGPConfig) Enabled() bool { return c.ID != "" && c.Status != "disabled" }

// BGPNeighbor is what a device needs to peer with the Metal routers.
type BGPNeighbor struct {
	AddressFamily int
	CustomerAS    int
	CustomerIP    string
	PeerAS        int
	PeerIPs       []string
	MD5Enabled    bool
	MD5Password   Sensitive
	Multihop      bool
	RoutesIn      []BGPRoute
	RoutesOut     []BGPRoute
}

// BGPRoute is a prefix a neighbor accepts or announces.
type BGPRoute struct {
	Route string
	Exact bool
}

// Plan is a hardware plan.
type Plan struct {
	ID     string
	Slug   string
	Name   string
	Class  string
	Type   string
	Line   string
	Legacy bool
	CPUs   []PlanComponent
	Memory string
	Drives []PlanDrive
	NICs   []PlanComponent
	UEFI   bool
	RAID   bool
}

func (p Plan) deepCopy() Plan {
	p.CPUs = append([]PlanComponent(nil), p.CPUs...)
	p.Drives = append([]PlanDrive(nil), p.Drives...)
	p.NICs = append([]PlanComponent(nil), p.NICs...)
	return p
}

// PlanComponent is a count of CPUs or NICs of one type.
type PlanComponent struct {
	Count int
	Type  string
}

// PlanDrive is a count of drives of one kind.
type PlanDrive struct {
	Count    int
	Type     string
	Size     string
	Category string
}

// HardwareReservation is a reserved server of the project: create a device
// on it with CreateDeviceRequest.HardwareReservationID (its ID, or
// "next-available" for any provisionable one of the plan in the metro).
type HardwareReservation struct {
	ID      string
	ShortID string
	// Plan is the plan slug; PlanDetails carries its specs when the answer
	// had the plan in full.
	Plan        string
	PlanDetails *Plan
	// Facility and Metro are lowercase codes (da11, da).
	Facility string
	Metro    string
	// Provisionable says whether a device can be created on it now: not in
	// use, not a spare, and not within the minutes after its last device
	// went away.
	Provisionable bool
	// Spare reservations stand by for broken ones; NeedOfService ones wait
	// for repair. Neither can be provisioned.
	Spare         bool
	NeedOfService bool
	// SwitchUUID tells which reserved servers share a top-of-rack switch.
	SwitchUUID string
	// DeviceID is the device on it, or "".
	DeviceID  string
	CreatedAt time.Time
}

// SpotPrice is the current spot market price of a plan in a metro, in US
// dollars per hour.
type SpotPrice struct {
	Metro string
	Plan  string
	Price float64
}

// CreateDeviceRequest describes a device to create.
type CreateDeviceRequest struct {
	Hostname        string
	Description     string
	Plan            string
	Metro           string
	BillingCycle    string
	OperatingSystem string
	IPXEScriptURL   string
	AlwaysPXE       bool
	Userdata        Sensitive
	Tags            []string
	Locked          bool
	// HardwareReservationID is a reservation UUID or "next-available".
	HardwareReservationID string
	SpotInstance          bool
	SpotPriceMax          float64
	TerminationTime       *time.Time
	Customdata            map[string]any
	ProjectSSHKeys        []string
	UserSSHKeys           []string
	NoSSHKeys             bool
}

// DeviceUpdate changes the fields that are set and leaves the others alone.
type DeviceUpdate struct {
	Hostname      *string
	Description   *string
	BillingCycle  *string
	IPXEScriptURL *string
	AlwaysPXE     *bool
	Locked        *bool
	NetworkFrozen *bool
	SpotInstance  *bool
	Tags          *[]string
	// Userdata replaces the device's userdata; an empty value clears it.
	Userdata   *Sensitive
	Customdata map[string]any
}

// ReinstallRequest reinstalls a device. The slow disk wipe is skipped only
// when both PreserveData and DeprovisionFast are true.
type ReinstallRequest struct {
	OperatingSystem string
	IPXEScriptURL   string
	PreserveData    bool
	DeprovisionFast bool
}

// ListDevicesOptions filters ListDevices; empty fields do not filter.
type ListDevicesOptions struct {
	Tag      string
	Hostname string
	Metro    string
	// Brief lists only what tells devices apart: ID, hostname, state, tags,
	// creation time. Plan, metro, facility and OS stay references; no
	// ports, no addresses. For lists across a whole project (the orphan
	// sweep).
	Brief bool
}

// CreateVLANRequest describes a VLAN to create. VXLAN 0 lets the API pick.
type CreateVLANRequest struct {
	Metro       string
	VXLAN       int
	Description string
	Tags        []string
}

// ReserveIPsRequest asks for a block of addresses. Type defaults to
// public_ipv4 and Quantity to 1.
type ReserveIPsRequest struct {
	Type     string
	Quantity int
	Metro    string
	Tags     []string
	Details  string
}

// ListIPReservationsOptions filters ListIPReservations. Tag is matched on our
// side because the API has no tag filter for IP reservations; empty Types
// lists every type.
type ListIPReservationsOptions struct {
	Tag   string
	Types []string
}

// BGPConfigRequest enables BGP on the project.
type BGPConfigRequest struct {
	ASN            int64
	DeploymentType string
	MD5            Sensitive
	UseCase        string
}

// BGPSessionRequest opens a BGP session for a device. AddressFamily is ipv4
// (the default) or ipv6.
type BGPSessionRequest struct {
	AddressFamily string
	DefaultRoute  bool
}
