package metal

import (
	"time"

	"github.com/harvester/harvester-equinix-addon/pkg/redact"
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
	Userdata        redact.Sensitive
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
	Userdata   *redact.Sensitive
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
	// creation time. Plan, metro and OS stay references; no ports, no
	// addresses. For lists across a whole project (the orphan sweep).
	Brief bool
	// WithTerminationTime lists only the devices the platform is to take
	// back (a spot device outbid, or one given a termination time), with
	// that time: one call answers for the whole project.
	WithTerminationTime bool
}

// CreateVLANRequest describes a VLAN to create. VXLAN 0 lets the API pick.
type CreateVLANRequest struct {
	Metro       string
	VXLAN       int
	Description string
	Tags        []string
}
