package metal

import "context"

// Client is one project's view of the bare-metal API. Implementations are
// safe for concurrent use. Every error is a *failure.Error of Seam (see failure.ClassOf).
//
// Single objects come back as pointers, lists as slices of values holding
// every page.
type Client interface {
	// ProjectID is the project every project-scoped call uses.
	ProjectID() string

	DeviceClient
	EventClient
	PortClient
	VLANClient
	IPClient
	BGPClient
	CapacityClient

	// ListPlans lists every hardware plan.
	ListPlans(ctx context.Context) ([]Plan, error)
}

// DeviceClient manages devices.
type DeviceClient interface {
	// CreateDevice sends the create exactly once. On a Transient or Unknown
	// error the device may exist anyway: list by tag and adopt it on the next
	// pass instead of calling CreateDevice again.
	CreateDevice(ctx context.Context, req CreateDeviceRequest) (*Device, error)
	// GetDevice reads a device with its ports (and their VLANs), addresses,
	// plan and metro. A 404 is NotFound; a 403 is Forbidden and needs a
	// ListDevices by tag to confirm the device is gone.
	GetDevice(ctx context.Context, id string) (*Device, error)
	// ListDevices lists the project's devices matching opts, all pages.
	ListDevices(ctx context.Context, opts ListDevicesOptions) ([]Device, error)
	UpdateDevice(ctx context.Context, id string, update DeviceUpdate) (*Device, error)
	// DeleteDevice deletes a device. Deleting one that is still provisioning
	// is Busy; a device already gone is NotFound.
	DeleteDevice(ctx context.Context, id string, force bool) error
	Reinstall(ctx context.Context, id string, req ReinstallRequest) error
	PowerOn(ctx context.Context, id string) error
	PowerOff(ctx context.Context, id string) error
	Reboot(ctx context.Context, id string) error
	// ListDeviceEvents lists a device's events, all pages, newest first.
	ListDeviceEvents(ctx context.Context, id string) ([]Event, error)
}

// EventClient reads the project's event log.
type EventClient interface {
	// ListProjectEvents lists the events of every device of the project,
	// newest first, back to opts.Since: it reads pages (newest first, as
	// the API lists them) until one reaches an event older than Since, so
	// a poll costs as many pages as events happened since the last one.
	// Events older than Since are left out; a zero Since reads the whole
	// log. Event.DeviceID says which device each is about.
	ListProjectEvents(ctx context.Context, opts ListEventsOptions) ([]Event, error)
}

// CapacityClient reads what the project may provision on: its reserved
// servers and the spot market.
type CapacityClient interface {
	// ListHardwareReservations lists the project's hardware reservations,
	// all pages, in the API's order.
	ListHardwareReservations(ctx context.Context) ([]HardwareReservation, error)
	// GetHardwareReservation reads one; a 404 is NotFound.
	GetHardwareReservation(ctx context.Context, id string) (*HardwareReservation, error)
	// ListSpotPrices lists the current spot market price of every plan in
	// every metro.
	ListSpotPrices(ctx context.Context) ([]SpotPrice, error)
}

// PortClient changes a device's network ports. A call can succeed before the
// port has changed: read the port again (GetPort or GetDevice) and compare
// before the next step.
type PortClient interface {
	GetPort(ctx context.Context, id string) (*Port, error)
	// BondPort adds a port to its bond; bulk bonds every port of the bond.
	// It returns the port as the API answered.
	BondPort(ctx context.Context, id string, bulk bool) (*Port, error)
	// DisbondPort takes a port out of its bond; bulk disbonds every port.
	// It returns the port as the API answered.
	DisbondPort(ctx context.Context, id string, bulk bool) (*Port, error)
	// ConvertLayer2 turns a bond to layer 2, dropping the device's addresses.
	// A bond already in layer 2 is success (and no port is returned); the
	// returned port may not show the conversion yet.
	ConvertLayer2(ctx context.Context, id string) (*Port, error)
	// ConvertLayer3 turns a bond back to layer 3, requesting public IPv4,
	// private IPv4 and public IPv6 addresses (new ones). VLANs must be
	// removed first. A bond already in layer 3 is success (and no port is
	// returned); the returned port may not show the conversion yet.
	ConvertLayer3(ctx context.Context, id string) (*Port, error)
	// AssignVLAN attaches a VLAN, by ID or VXLAN number, to a port; one
	// already on the port is success.
	AssignVLAN(ctx context.Context, portID, vnid string) error
	// UnassignVLAN detaches a VLAN; one that is not on the port is success.
	UnassignVLAN(ctx context.Context, portID, vnid string) error
	// AssignNativeVLAN makes a VLAN already on the port its native VLAN.
	AssignNativeVLAN(ctx context.Context, portID, vnid string) error
	RemoveNativeVLAN(ctx context.Context, portID string) error
}

// VLANClient manages the project's VLANs.
type VLANClient interface {
	// ListVLANs lists the project's VLANs in metro ("" for every metro).
	ListVLANs(ctx context.Context, metro string) ([]VirtualNetwork, error)
	CreateVLAN(ctx context.Context, req CreateVLANRequest) (*VirtualNetwork, error)
	GetVLAN(ctx context.Context, id string) (*VirtualNetwork, error)
	// DeleteVLAN deletes a VLAN; unassign it from every port first.
	DeleteVLAN(ctx context.Context, id string) error
}

// IPClient manages reserved addresses (Elastic IPs) and their assignments.
type IPClient interface {
	// ReserveIPs requests a block. Without WaitForApproval a request the
	// API would hold for approval is refused (Invalid).
	ReserveIPs(ctx context.Context, req ReserveIPsRequest) (*IPReservation, error)
	// ListIPReservations lists the project's reservations with their
	// assignments, all pages.
	ListIPReservations(ctx context.Context, opts ListIPReservationsOptions) ([]IPReservation, error)
	// GetIPReservation reads a reservation with its assignments; an
	// assignment ID is Invalid (use GetIP).
	GetIPReservation(ctx context.Context, id string) (*IPReservation, error)
	// GetIP reads a reservation or an assignment by ID.
	GetIP(ctx context.Context, id string) (*IP, error)
	// ReleaseIPReservation releases a reservation, assigned or not; its
	// assignments go with it. One already gone is NotFound.
	ReleaseIPReservation(ctx context.Context, id string) error
	// AssignIP assigns an address ("147.75.1.2/32" or bare) to a device. An
	// address already assigned to that device is success (the existing
	// assignment is returned); one assigned to another device is Busy until
	// it is unassigned there.
	AssignIP(ctx context.Context, deviceID, address string) (*IPAddress, error)
	// UnassignIP removes an assignment by its ID; one already gone is
	// NotFound. Move an address by unassigning it, then assigning it.
	UnassignIP(ctx context.Context, assignmentID string) error
	ListDeviceIPs(ctx context.Context, deviceID string) ([]IPAddress, error)
}

// BGPClient manages the project's BGP configuration and device sessions.
type BGPClient interface {
	// GetBGPConfig returns the project's configuration; one with an empty ID
	// when BGP was never requested (see BGPConfig.Enabled).
	GetBGPConfig(ctx context.Context) (*BGPConfig, error)
	// CreateBGPConfig requests BGP for the project; already enabled is
	// success. Any 2xx is accepted (the spec says 204, mocks answered 201).
	// The config is "requested" for a while before it is "enabled".
	CreateBGPConfig(ctx context.Context, req BGPConfigRequest) error
	// CreateBGPSession opens a session; an existing one is success.
	CreateBGPSession(ctx context.Context, deviceID string, req BGPSessionRequest) error
	// ListBGPSessions lists a device's sessions.
	ListBGPSessions(ctx context.Context, deviceID string) ([]BGPSession, error)
	// GetBGPSession reads a session; one gone (with its device) is NotFound.
	GetBGPSession(ctx context.Context, id string) (*BGPSession, error)
	// DeleteBGPSession closes a session; one already gone is NotFound.
	DeleteBGPSession(ctx context.Context, id string) error
	// ListBGPNeighbors returns what the device needs to peer, one entry per
	// session (IPv4 and IPv6).
	ListBGPNeighbors(ctx context.Context, deviceID string) ([]BGPNeighbor, error)
}

// Operation names, used as the operation label of the metrics and as
// Error.Op.
const (
	OpCreateDevice         = "CreateDevice"
	OpGetDevice            = "GetDevice"
	OpListDevices          = "ListDevices"
	OpUpdateDevice         = "UpdateDevice"
	OpDeleteDevice         = "DeleteDevice"
	OpReinstall            = "Reinstall"
	OpPowerOn              = "PowerOn"
	OpPowerOff             = "PowerOff"
	OpReboot               = "Reboot"
	OpListDeviceEvents     = "ListDeviceEvents"
	OpListProjectEvents    = "ListProjectEvents"
	OpGetPort              = "GetPort"
	OpBondPort             = "BondPort"
	OpDisbondPort          = "DisbondPort"
	OpConvertLayer2        = "ConvertLayer2"
	OpConvertLayer3        = "ConvertLayer3"
	OpAssignVLAN           = "AssignVLAN"
	OpUnassignVLAN         = "UnassignVLAN"
	OpAssignNativeVLAN     = "AssignNativeVLAN"
	OpRemoveNativeVLAN     = "RemoveNativeVLAN"
	OpListVLANs            = "ListVLANs"
	OpCreateVLAN           = "CreateVLAN"
	OpGetVLAN              = "GetVLAN"
	OpDeleteVLAN           = "DeleteVLAN"
	OpReserveIPs           = "ReserveIPs"
	OpListIPReservations   = "ListIPReservations"
	OpGetIPReservation     = "GetIPReservation"
	OpGetIP                = "GetIP"
	OpReleaseIPReservation = "ReleaseIPReservation"
	OpAssignIP             = "AssignIP"
	OpUnassignIP           = "UnassignIP"
	OpListDeviceIPs        = "ListDeviceIPs"
	OpGetBGPConfig         = "GetBGPConfig"
	OpCreateBGPConfig      = "CreateBGPConfig"
	OpCreateBGPSession     = "CreateBGPSession"
	OpListBGPSessions      = "ListBGPSessions"
	OpGetBGPSession        = "GetBGPSession"
	OpDeleteBGPSession     = "DeleteBGPSession"
	OpListBGPNeighbors     = "ListBGPNeighbors"
	OpListPlans            = "ListPlans"

	OpListHardwareReservations = "ListHardwareReservations"
	OpGetHardwareReservation   = "GetHardwareReservation"
	OpListSpotPrices           = "ListSpotPrices"
)

// projectScopedOps address the project from the credentials, so a 404 means
// the project ID is wrong, not that an object is gone.
var projectScopedOps = map[string]bool{
	OpCreateDevice:             true,
	OpListDevices:              true,
	OpListHardwareReservations: true,
	OpListProjectEvents:        true,
	OpListVLANs:                true,
	OpCreateVLAN:               true,
	OpReserveIPs:               true,
	OpListIPReservations:       true,
	OpGetBGPConfig:             true,
	OpCreateBGPConfig:          true,
}
