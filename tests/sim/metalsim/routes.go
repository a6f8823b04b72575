package metalsim

import (
	"net/http"
	"strings"
)

type route struct {
	pattern string // "METHOD path" relative to /metal/v1
	op      string
	h       func(s *Simulator) handlerFunc
}

// apiRoutes lists every endpoint under /metal/v1 with its operation name.
var apiRoutes = []route{
	{"POST /projects/{id}/devices", OpCreateDevice, func(s *Simulator) handlerFunc { return s.createDevice }},
	{"GET /projects/{id}/devices", OpFindProjectDevices, func(s *Simulator) handlerFunc { return s.findProjectDevices }},
	{"GET /devices/{id}", OpFindDeviceByID, func(s *Simulator) handlerFunc { return s.findDeviceByID }},
	{"PUT /devices/{id}", OpUpdateDevice, func(s *Simulator) handlerFunc { return s.updateDevice }},
	{"DELETE /devices/{id}", OpDeleteDevice, func(s *Simulator) handlerFunc { return s.deleteDevice }},
	{"POST /devices/{id}/actions", OpPerformAction, func(s *Simulator) handlerFunc { return s.performAction }},
	{"GET /devices/{id}/events", OpFindDeviceEvents, func(s *Simulator) handlerFunc { return s.findDeviceEvents }},
	{"GET /projects/{id}/events", OpFindProjectEvents, func(s *Simulator) handlerFunc { return s.findProjectEvents }},

	{"GET /ports/{id}", OpFindPortByID, func(s *Simulator) handlerFunc { return s.findPortByID }},
	{"POST /ports/{id}/assign", OpAssignPort, func(s *Simulator) handlerFunc { return s.assignPort }},
	{"POST /ports/{id}/unassign", OpUnassignPort, func(s *Simulator) handlerFunc { return s.unassignPort }},
	{"POST /ports/{id}/bond", OpBondPort, func(s *Simulator) handlerFunc { return s.bondPort }},
	{"POST /ports/{id}/disbond", OpDisbondPort, func(s *Simulator) handlerFunc { return s.disbondPort }},
	{"POST /ports/{id}/convert/layer-2", OpConvertLayer2, func(s *Simulator) handlerFunc { return s.convertLayer2 }},
	{"POST /ports/{id}/convert/layer-3", OpConvertLayer3, func(s *Simulator) handlerFunc { return s.convertLayer3 }},
	{"POST /ports/{id}/native-vlan", OpAssignNativeVlan, func(s *Simulator) handlerFunc { return s.assignNativeVlan }},
	{"DELETE /ports/{id}/native-vlan", OpDeleteNativeVlan, func(s *Simulator) handlerFunc { return s.deleteNativeVlan }},

	{"POST /projects/{id}/virtual-networks", OpCreateVirtualNetwork, func(s *Simulator) handlerFunc { return s.createVirtualNetwork }},
	{"GET /projects/{id}/virtual-networks", OpFindVirtualNetworks, func(s *Simulator) handlerFunc { return s.findVirtualNetworks }},
	{"GET /virtual-networks/{id}", OpGetVirtualNetwork, func(s *Simulator) handlerFunc { return s.getVirtualNetwork }},
	{"DELETE /virtual-networks/{id}", OpDeleteVirtualNetwork, func(s *Simulator) handlerFunc { return s.deleteVirtualNetwork }},

	{"POST /projects/{id}/ips", OpRequestIPReservation, func(s *Simulator) handlerFunc { return s.requestIPReservation }},
	{"GET /projects/{id}/ips", OpFindIPReservations, func(s *Simulator) handlerFunc { return s.findIPReservations }},
	{"GET /ips/{id}", OpFindIPAddressByID, func(s *Simulator) handlerFunc { return s.findIPAddressByID }},
	{"DELETE /ips/{id}", OpDeleteIPAddress, func(s *Simulator) handlerFunc { return s.deleteIPAddress }},
	{"POST /devices/{id}/ips", OpCreateIPAssignment, func(s *Simulator) handlerFunc { return s.createIPAssignment }},
	{"GET /devices/{id}/ips", OpFindIPAssignments, func(s *Simulator) handlerFunc { return s.findIPAssignments }},

	{"POST /projects/{id}/bgp-configs", OpRequestBgpConfig, func(s *Simulator) handlerFunc { return s.requestBgpConfig }},
	{"GET /projects/{id}/bgp-config", OpFindBgpConfigByProject, func(s *Simulator) handlerFunc { return s.findBgpConfig }},
	{"POST /devices/{id}/bgp/sessions", OpCreateBgpSession, func(s *Simulator) handlerFunc { return s.createBgpSession }},
	{"GET /devices/{id}/bgp/sessions", OpFindBgpSessions, func(s *Simulator) handlerFunc { return s.findBgpSessions }},
	{"GET /devices/{id}/bgp/neighbors", OpGetBgpNeighborData, func(s *Simulator) handlerFunc { return s.getBgpNeighbors }},
	{"GET /bgp/sessions/{id}", OpFindBgpSessionByID, func(s *Simulator) handlerFunc { return s.findBgpSessionByID }},
	{"DELETE /bgp/sessions/{id}", OpDeleteBgpSession, func(s *Simulator) handlerFunc { return s.deleteBgpSession }},

	{"GET /projects/{id}/hardware-reservations", OpFindProjectHardwareReservations, func(s *Simulator) handlerFunc { return s.findProjectHardwareReservations }},
	{"GET /hardware-reservations/{id}", OpFindHardwareReservationByID, func(s *Simulator) handlerFunc { return s.findHardwareReservation }},

	{"GET /market/spot/prices/metros", OpFindMetroSpotMarketPrices, func(s *Simulator) handlerFunc { return s.findMetroSpotMarketPrices }},

	{"GET /plans", OpFindPlans, func(s *Simulator) handlerFunc { return s.findPlans }},
}

// metadataRoutes are served outside /metal/v1 without a token; the device
// is named by DeviceIDHeader.
var metadataRoutes = []route{
	{"GET /metadata", OpMetadata, func(s *Simulator) handlerFunc { return s.serveMetadata }},
	{"GET /userdata", OpUserdata, func(s *Simulator) handlerFunc { return s.serveUserdata }},
	{"POST /events", OpUserState, func(s *Simulator) handlerFunc { return s.postUserState }},
	{"POST /phone-home", OpPhoneHome, func(s *Simulator) handlerFunc { return s.phoneHome }},
}

func (s *Simulator) routes() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range apiRoutes {
		method, path, _ := strings.Cut(rt.pattern, " ")
		mux.Handle(method+" "+apiPrefix+path, s.endpoint(apiRoute, rt.op, rt.h(s)))
	}
	for _, rt := range metadataRoutes {
		mux.Handle(rt.pattern, s.endpoint(metadataRoute, rt.op, rt.h(s)))
	}
	s.adminRoutes(mux)
	// Catch-alls answer JSON 404s (and keep ServeMux from answering 405s in
	// plain text); API paths still need a valid token first.
	mux.Handle(apiPrefix+"/", s.endpoint(apiRoute, "", notFoundHandler))
	mux.Handle("/", s.endpoint(metadataRoute, "", notFoundHandler))
	return mux
}
