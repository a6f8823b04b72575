// Package metalsim is an in-memory Equinix Metal API that the real
// equinix-sdk-go v0.66.0 client (services/metalv1) cannot tell from the
// real service. Equinix Metal shut down on 2026-06-30, so this is the only
// test target for pkg/metal and the controllers.
//
// Every response body is a metalv1 model marshalled by the SDK's own
// MarshalJSON, with Content-Type application/json, the SDK's field names and
// enum values, and the status codes the real API used. Behaviour that could
// not be confirmed from code or issues written against the live API is
// marked "inferred" below.
//
// # Quick start
//
//	clock := metalsim.NewFakeClock(time.Now())
//	sim := metalsim.New(metalsim.Options{Clock: clock, Timings: metalsim.DefaultTimings(), Seed: 1})
//	sim.AddProject("token", projectID)
//	srv := httptest.NewServer(sim.Handler())   // or metalsim.NewServer(sim, "")
//
//	cfg := metalv1.NewConfiguration()
//	cfg.Servers = metalv1.ServerConfigurations{{URL: srv.URL + "/metal/v1"}}
//	cfg.AddDefaultHeader("X-Auth-Token", "token")
//	client := metalv1.NewAPIClient(cfg)
//
//	clock.Advance(4 * time.Minute) // queued -> provisioning -> active
//	sim.Tick()                     // optional: notify observers without a request
//
// # Public API
//
//   - New(Options) *Simulator; Options{Clock, Timings, Seed, RateLimit,
//     RateLimitWindow}. A nil Clock is the real clock; the zero Timings makes
//     every step complete on the next access (DefaultTimings has realistic
//     durations, Timings.Scale shrinks them for a standalone server).
//   - AddProject(token, projectID): a token may hold several projects.
//   - AddHardwareReservation(projectID, plan, metro) (id, error),
//     AddHardwareReservations(projectID, HardwareReservation{Plan, Metro,
//     Facility, Spare}, count) (ids, error).
//   - SetSpotMarket(SpotMarket{Metro, Plan, Price, Capacity}).
//   - Handler() http.Handler; NewServer(sim, addr) (*Server, error) with
//     Server.URL ending in /metal/v1, Server.RootURL and Server.Close.
//   - Requests(), RequestsFor(op), ResetRequests(): the request log (method,
//     path, query, operation, status, simulator time, fault; never a token).
//   - InjectFault(Fault) FaultID, RemoveFault(id) bool, ClearFaults,
//     FaultFired(id), Faults() []FaultState.
//   - Devices(projectID), Device(id), DeviceNetwork(id), DeviceEvents(id):
//     deep copies with every nested object included (nested VLANs without
//     their instances).
//   - DeleteDeviceOutOfBand(id), AddDeviceEvent(deviceID, type, body),
//     AddDeviceEventWithState(deviceID, type, state, body),
//     AddMaintenanceEvent(deviceID, start, message),
//     SetTerminationTime(deviceID, t) (zero t clears it).
//   - AddIPReservation(projectID, IPReservationSpec) (id, error): a
//     reservation of exactly the given block (any IPv4 /24 to /32, say a test
//     cluster's VIP 10.0.0.10/32), in state created; pool addresses never
//     overlap it. ApproveIPReservation(id) and DenyIPReservation(id) decide
//     a pending one. Errors wrap ErrNotFound, ErrInvalid, ErrAddressInUse
//     or ErrWrongState.
//   - AttachRouters(Routers), DetachRouters, RouterPeers, ReportRouters,
//     RouteOf: the hooks of a top-of-rack (package tor), see BGP below.
//   - The admin API (AdminPrefix, below) exposes the same over HTTP.
//   - Subscribe(func(Notification)) (unsubscribe func()), Tick(),
//     RunTicker(ctx, interval).
//   - NewFakeClock(start) *FakeClock with Now, Advance and Set.
//
// Package standalone (Start) serves a simulator on the real clock with a
// ticker, a progress log and optionally the node-join agent; it backs the
// harvester-equinix-addon-simulator command (tests/cmd/simulator), which
// prints its base URL as the first line of stdout. The command seeds projects, tokens, hardware
// reservations and spot prices from flags (--token/--project-id,
// --extra-project <token>:<project-id>, --hardware-reservation
// <project-id>:<plan>:<metro or facility>[:<count>]) or from --seed-file,
// YAML or JSON:
//
//	projects:
//	  - id: <project UUID>
//	    tokens: [<token>, ...]
//	    hardware_reservations:
//	      - {plan: c3.small.x86, metro: da, facility: da11, count: 3, spare: false}
//	spot_market:
//	  - {metro: da, plan: c3.small.x86, price: 0.25, capacity: 10}
//
// Operation names (OpCreateDevice = "createDevice", ...) are the OpenAPI
// operationIds behind the SDK methods; faults and the request log use them.
//
// # Endpoints under /metal/v1
//
// Exactly the operations the addon's client (pkg/metal) calls, and no more:
// a route the client does not use would be simulated behaviour nothing
// checks against the real service. Devices: POST/GET
// /projects/{id}/devices, GET/PUT/DELETE /devices/{id}, POST
// /devices/{id}/actions. Events: GET /devices/{id}/events, GET
// /projects/{id}/events. Capacity: GET /projects/{id}/hardware-reservations,
// GET /hardware-reservations/{id}, GET /market/spot/prices/metros. Ports:
// GET /ports/{id}, POST /ports/{id}/{assign,unassign,bond,disbond}, POST
// /ports/{id}/convert/{layer-2,layer-3}, POST/DELETE
// /ports/{id}/native-vlan. VLANs: POST/GET /projects/{id}/virtual-networks,
// GET/DELETE /virtual-networks/{id}. IPs: POST/GET /projects/{id}/ips,
// GET/DELETE /ips/{id}, POST/GET /devices/{id}/ips. BGP: POST
// /projects/{id}/bgp-configs, GET /projects/{id}/bgp-config, POST/GET
// /devices/{id}/bgp/sessions, GET /devices/{id}/bgp/neighbors, GET/DELETE
// /bgp/sessions/{id}. Catalog: GET /plans. Anything else answers a JSON
// 404. TestRoutesAreTheClientsOperations keeps this list and the client's
// calls the same.
//
// Authentication is the X-Auth-Token header; a missing or unknown token gets
// 401 {"error":"Invalid authentication token"}. Objects of a project the
// token does not hold answer 403 ("You are not authorized to view this
// device") for operations whose spec lists a 403, and 404 otherwise
// (inferred rule).
//
// # Devices
//
// States follow the API: queued -> provisioning -> active (or failed with
// FaultProvisionFailure); a custom_ipxe device turns active the moment its
// iPXE script is handed out (Timings.IPXEBoot), a regular OS after
// Timings.Provision. Reinstall: reinstalling -> active (the disk wipe is
// skipped only with preserve_data and deprovision_fast). power_off:
// powering_off -> inactive after Timings.Power; power_on: powering_on ->
// active; reboot and rescue keep the device active while the host is down
// for Timings.Power (DeviceRebooting, then DeviceBooted). Every action is
// recorded as events. Delete: deprovisioning -> gone (GET 404).
//
// termination_time is acted on, for spot and any other device: at that time
// the device is reclaimed (instance.reclaimed, deprovisioning, then gone;
// notifications carry Reclaimed). Setting it (at create, which refuses a
// time not in the future, through SetTerminationTime, or by a
// FaultSpotReclaim) records an instance.termination_scheduled notice.
// Deleting while queued or provisioning answers 422 "Cannot delete a device
// while it is provisioning"; deleting a locked, reinstalling or already
// deprovisioning device answers 422 too (inferred); force_delete is accepted
// but overrides none of these.
//
// The custom iPXE rules of the spec are enforced with 422s: custom_ipxe
// needs ipxe_script_url or userdata starting with #!ipxe, not both, and
// ipxe_script_url needs custom_ipxe. Facility-based creates are refused.
//
// A device's plan (with its specs: cpus, memory, drives, nics, features),
// metro, facility and operating system come in full without include, as
// the API's device reads did (the Equinix CCM reads plan.slug, metro.code
// and facility.code from a plain GET); project and hardware_reservation are
// {"href": ...} unless named in include. exclude reduces any of them to the
// href (plan, metro, facility and operating system keep it in
// AdditionalProperties since their models have no Href field) and drops
// other named fields, which is how a brief project list stays brief. A
// device lands in one of its metro's facilities (da11 or da6 in da, ...),
// in turn, or in its hardware reservation's. Port
// virtual_networks are hrefs unless "virtual_networks" (or
// "network_ports.virtual_networks") is included. Lists paginate with page and
// per_page (default 10, clamped to 1-1000) and fill meta completely.
//
// Ports: eth0, eth1 and bond0 (4-NIC plans add eth2, eth3 and bond1), with
// MACs unique for the simulator's life, shown once provisioning starts
// (inferred: hardware is picked then). New devices are layer3: every eth
// bonded, bond0 in layer 3 holding one public IPv4 /31, one public IPv6 /127
// and one private IPv4 /31; bond1 starts in layer 2 (terraform-provider-packet
// #306). Each port's network_type is derived from per-port bonded flags,
// per-bond layer and VLANs. convert/layer-2 drops the device's addresses and
// answers 422 "bond0 is already configured for Layer 2" on an L2 bond;
// convert/layer-3 needs the VLANs removed, re-bonds the members, allocates new
// addresses and answers 422 "bond0 is already layer3" on an L3 bond. With a
// non-zero Timings.PortConversion the conversion answers with the unchanged
// port and lands later, so clients must re-read. Native VLANs need the VLAN
// on the port, at least two VLANs and a layer-2 port (inferred). Disbonding
// every member of a layer-3 bond is accepted, as the live API did (metal-cli's
// port convert disbonds before it converts, and its end-to-end tests ran
// that); the bond keeps its layer and addresses until it is converted.
//
// # Hardware reservations and the spot market
//
// GET /projects/{id}/hardware-reservations (paginated, creation order;
// query, state and provisionable=only filters) and GET
// /hardware-reservations/{id} carry id, short_id, href, created_at, plan and
// facility in full, project and device as hrefs unless included,
// provisionable, spare, need_of_service, switch_uuid and custom_rate. A
// reservation is provisionable when it has no device, is no spare and
// Timings.ReservationRelease has passed since its last device went away.
// Creates with hardware_reservation_id answer 422: "<id> is not a valid
// hardware reservation" for an unknown or foreign ID and "There are no
// available hardware reservations for selected plan and facility" when
// next-available finds none (both the API's wording); for one in use, of
// another plan, in another metro, a spare, or released too recently
// ("not provisionable yet, try again in a few minutes") the wording is
// inferred. next-available takes the first provisionable one of the plan
// in the metro.
//
// GET /market/spot/prices/metros answers the SDK's report model: location code -> plan slug -> {price}. A
// price is 30% of the plan's on-demand rate unless SetSpotMarket set one;
// capacity is unlimited unless set. A spot create whose spot_price_max is
// below the price, or with the metro's spot capacity for the plan in use,
// is refused with a 422 (wording inferred; the capacity one says
// "capacity").
//
// # Events
//
// Device and project event lists page newest first, as the API's did (a
// Packet build-farm script read /devices/{id}/events?per_page=50 and stopped
// at the first provisioning.104.01 to take the SSH key posted after the
// latest boot). Each event has id, href, type, state, body, interpolated
// (the body with the hostname for "{{ device }}"), created_at and one
// relationship, the device's href. A project's events outlive the device
// (its own list answers 404 once it is gone). Recorded: creation, the
// provisioning steps (provisioning.104.01 "Device connected to DHCP system"
// on every PXE boot, provisioning.106 and provisioning.109 for a regular
// OS), state changes, reinstalls, power off/on, reboot and rescue, updates,
// every port, VLAN and IP change, BGP sessions, the metadata service's user
// states and phone-homes, maintenance notices, termination notices and
// reclaims. The types are the Event* constants; those not named after a
// provisioning code are inferred.
//
// # IP addresses
//
// The public IPv4 /31 and IPv6 /127 of a device are blocks of its own that
// go with it. Its private IPv4 /31 comes from the project's private /25 in
// the metro (a private_ipv4 management reservation listed with the
// project's IPs; another /25 is added when one is used up) and is the
// assignment's parent_block, which the Equinix CCM annotates as
// network-4-private. Addresses are never handed out twice.
//
// Reservations: public_ipv4 needs a metro, global_ipv4 has none; quantity a
// power of two up to 256 (1 is a /32, 4 a /30, 8 a /29). Up to 4 addresses
// are created at once; larger requests need an approval: refused with 422
// when fail_on_approval_required is set, pending otherwise (until
// ApproveIPReservation or DenyIPReservation, inferred limit). Lists
// paginate and filter by types; include=assignments expands them. GET
// /ips/{id} answers a reservation or an assignment (the SDK's oneOf).
//
// Assignments take "a.b.c.d", "a.b.c.d/32" or a sub-block, inside a
// created reservation of the device's project and metro (global ones go
// anywhere), on a device whose bond0 is in layer 3. An address outside
// every reservation answers 422 {"errors":["Address is not reserved for
// the project"]} and an address already assigned, to another device or to
// the same one, 422 {"errors":["Address has already been taken"]}
// (observed wordings; the same-device case is inferred). DELETE /ips/{id}
// unassigns an assignment and releases a reservation, assigned or not: its
// assignments go with it (the spec lists no 422 there, and packngo #183
// saw an assigned EIP deleted that way); a device's management block
// cannot be released (422). Assignments vanish with their device however
// it goes (delete, out-of-band delete) and with a layer-2 conversion.
//
// # BGP
//
// POST /projects/{id}/bgp-configs answers 204; the config is "requested"
// and turns "enabled" after Timings.BGPEnable (global BGP stays requested,
// inferred). An empty md5 means none (the CCM sends ""); otherwise 10-20
// letters and digits; GET bgp-config returns the password in md5 (the CCM
// reads it there), and answers 200 with an empty id while BGP is off. A
// second request answers 422 "already enabled" (inferred). Sessions can be
// created once the config exists (422 "already has session" for a second
// one of the family), are listed per device and by ID, and vanish with
// their device. Neighbors: customer_as is the project's ASN, customer_ip
// the private IPv4 (public IPv6 for ipv6 sessions), peer_as 65530,
// peer_ips 169.254.255.1 and .2, multihop, md5_enabled and md5_password
// from the project, routes_in the announceable prefixes (the project's
// created Elastic IPs in the device's metro and its global IPs, exact for a
// /32) and routes_out 0.0.0.0/0 when the session asked for the default
// route.
//
// A session's status is "unknown" unless a top-of-rack is attached:
// AttachRouters (called by tor.Start, before any device exists) makes the
// routers' addresses the peer_ips and moves the private pool to where a
// test speaker can bind (loopback); the routers read RouterPeers, and
// report with ReportRouters, after which status is "up" or "down",
// learned_routes lists the accepted prefixes and RouteOf(prefix) names the
// device an Elastic IP is routed to. The routers are woken through the
// channel AttachRouters returns whenever sessions, configs, reservations
// or device addresses change.
//
// # Faults
//
// Fault{Kind, Operations, Probability, Count, ...} with kinds
// FaultRateLimit (429 with Retry-After and X-RateLimit-*), FaultServerError
// (500 JSON, 502/504 HTML, 503 text, or a custom body; with AfterStore the
// request is applied first), FaultForbidden (403; GETs only unless
// Operations are named), FaultLatency, FaultDropConnection (transport error;
// with AfterStore a create is stored although the client never sees it),
// FaultProvisionFailure and FaultNoCapacity (422 {"errors":["There aren't
// available servers in that metro"]}), both narrowed by Plan and Metro, and
// FaultSpotReclaim (a matching spot device is reclaimed LeadTime after it
// turns active, with a notice then). Actions narrows a fault on
// performAction to action types (power_off, power_on, reboot, ...).
// Probabilities draw from a generator seeded with Options.Seed.
//
// # Admin API
//
// Under /_sim (AdminPrefix), outside /metal/v1, for loopback clients only
// (others get 403) and without a token; JSON in and out, errors as
// {"error": "..."}:
//
//	GET    /_sim/faults                  {"faults":[{"id","fired","fault"}]}
//	POST   /_sim/faults                  a Fault -> 201 {"id","fired","fault"}
//	DELETE /_sim/faults/{id}             204 (404 unknown)
//	DELETE /_sim/faults                  204, clears every fault
//	PUT    /_sim/devices/{id}/termination-time  {"termination_time": RFC 3339 or null}
//	POST   /_sim/devices/{id}/maintenance       {"start": RFC 3339, "message": "..."}
//	DELETE /_sim/devices/{id}            out-of-band delete
//	POST   /_sim/projects/{id}/hardware-reservations
//	                                     {"plan","metro","facility","spare","count"} -> 201 {"ids":[...]}
//	PUT    /_sim/spot-market             {"metro","plan","price","capacity"}
//
// A Fault in JSON has the Go fields in snake_case (kind, operations,
// actions, probability, count, status, body, content_type, message,
// retry_after, latency, lead_time, after_store, plan, metro), durations as Go
// duration strings ("2s"); unknown fields and kinds are refused with 400.
//
// # Notifications
//
// Subscribe receives a Notification for every device transition:
// DeviceCreated, DeviceStateChanged, DeviceBooted (with Boot: reason, whether
// iPXE ran, the script URL or the #!ipxe userdata), DeviceRebooting (a
// reboot or rescue took the host down), DevicePoweredOff,
// DeviceNetworkChanged, DeviceUpdated and DeviceDeleted (OutOfBand for
// DeleteDeviceOutOfBand; Reclaimed, also on the deprovisioning state change,
// for a reclaim at termination_time). Each carries the userdata, the network
// state (type, MACs per port, VLANs, addresses) and the device rendered
// with everything included (nested VLANs without their instances) into
// fresh structs. Transitions
// are applied lazily on every request and on Tick; notifications are
// delivered in order, outside the lock, before the triggering response is
// written (unless another goroutine is already delivering), and callbacks may
// call back into the Simulator. Treat them as read-only.
//
// # Cost at fleet size
//
// A call's handling time does not grow with the number of devices: projects
// keep their devices (in creation order, the order of their lists) and a
// list per tag, their IP blocks, events and hardware reservations; VLANs
// keep their ports and devices. Transitions wait in a heap of timers, so Tick and every request
// apply only what is due. Only answers that list many objects grow with
// them: a page of a list, a VLAN's instances (every device on it, as the
// API answered; their hrefs are written straight into the answer, which
// keeps a VLAN shared by 2,000 devices under a millisecond), a project's
// BGP sessions. BenchmarkScale measures the calls a provisioning
// controller makes at 10 and 2,000 devices one by one, and
// BenchmarkCallsByFleetSize one server's whole sequence of them (go test
// -run '^$' -bench 'Scale|CallsByFleetSize' ./tests/sim/metalsim);
// make bench's simcost scenario measures the same through the SDK.
//
// # Metadata service
//
// GET /metadata (JSON, see Metadata), GET /userdata (raw), POST /events
// (UserState, recorded as an EventUserState device event) and POST
// /phone-home are served outside /metal/v1 without a token. The calling
// device is named by the X-Simulator-Device-ID header (DeviceIDHeader) since
// source-address routing is impossible here (inferred). A device that is not
// active answers 404; one in pure layer 2 answers 503 because the real
// service is unreachable from there.
package metalsim
