package metalsim

// Operation names identify endpoints in faults and in the request log. API
// operations use the OpenAPI operationId behind the SDK method of the same
// name (OpCreateDevice is DevicesApi.CreateDevice); the metadata service
// has names of its own.
const (
	OpCreateDevice       = "createDevice"
	OpFindDeviceByID     = "findDeviceById"
	OpFindProjectDevices = "findProjectDevices"
	OpUpdateDevice       = "updateDevice"
	OpDeleteDevice       = "deleteDevice"
	OpPerformAction      = "performAction"
	OpFindDeviceEvents   = "findDeviceEvents"
	OpFindProjectEvents  = "findProjectEvents"

	OpFindPortByID                    = "findPortById"
	OpAssignPort                      = "assignPort"
	OpUnassignPort                    = "unassignPort"
	OpBondPort                        = "bondPort"
	OpDisbondPort                     = "disbondPort"
	OpConvertLayer2                   = "convertLayer2"
	OpConvertLayer3                   = "convertLayer3"
	OpAssignNativeVlan                = "assignNativeVlan"
	OpDeleteNativeVlan                = "deleteNativeVlan"
	OpCreateVirtualNetwork            = "createVirtualNetwork"
	OpFindVirtualNetworks             = "findVirtualNetworks"
	OpGetVirtualNetwork               = "getVirtualNetwork"
	OpDeleteVirtualNetwork            = "deleteVirtualNetwork"
	OpRequestIPReservation            = "requestIPReservation"
	OpFindIPReservations              = "findIPReservations"
	OpFindIPAddressByID               = "findIPAddressById"
	OpDeleteIPAddress                 = "deleteIPAddress"
	OpCreateIPAssignment              = "createIPAssignment"
	OpFindIPAssignments               = "findIPAssignments"
	OpRequestBgpConfig                = "requestBgpConfig"
	OpFindBgpConfigByProject          = "findBgpConfigByProject"
	OpCreateBgpSession                = "createBgpSession"
	OpFindBgpSessions                 = "findBgpSessions"
	OpFindBgpSessionByID              = "findBgpSessionById"
	OpDeleteBgpSession                = "deleteBgpSession"
	OpGetBgpNeighborData              = "getBgpNeighborData"
	OpFindProjectHardwareReservations = "findProjectHardwareReservations"
	OpFindHardwareReservationByID     = "findHardwareReservationById"
	OpFindMetroSpotMarketPrices       = "findMetroSpotMarketPrices"
	OpFindPlans                       = "findPlans"

	// Metadata service (outside /metal/v1).
	OpMetadata  = "metadata"
	OpUserdata  = "userdata"
	OpUserState = "userState"
	OpPhoneHome = "phoneHome"
)

// opsAnswering404 are the operations whose OpenAPI spec lists no 403: for
// them an object of another project is reported as not found. Every other
// operation answers 403, as GET /devices/{id} did ("You are not authorized
// to view this device").
var opsAnswering404 = map[string]bool{
	OpPerformAction:      true,
	OpCreateIPAssignment: true,
	OpFindIPAssignments:  true,
	OpFindPortByID:       true,
	OpAssignNativeVlan:   true,
	OpDeleteNativeVlan:   true,
}
