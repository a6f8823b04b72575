// Package bmcsim is a Redfish BMC for tests: an http.Handler and an HTTPS
// server with a certificate from its own CA, answering like a server's BMC
// would, with JSON that follows the DMTF schema (@odata.id, @odata.type and
// @odata.context on every resource). DMTF's Redfish mock server is a Python
// program a Go test cannot start in-process or shape per test, so the project
// carries its own, in the style of the Metal simulator (tests/sim/metalsim).
//
// # Quick start
//
//	sim := bmcsim.New(bmcsim.Options{Username: "root", Password: "pw"})
//	srv, _ := bmcsim.NewServer(sim, "")    // https://127.0.0.1:port
//	ep := bmc.Endpoint{Protocol: bmc.ProtocolRedfish, Host: srv.Host, Port: srv.Port,
//		CABundle: srv.CACertPEM, Username: "root", Password: "pw"}
//
// # Resources
//
// /redfish/v1/ (service root, open to all), SessionService and Sessions
// (POST login answering X-Auth-Token and Location, DELETE logout), HTTP
// basic auth, Systems/1 (ComputerSystem with Manufacturer, Model,
// SerialNumber, BiosVersion, PowerState, ProcessorSummary, MemorySummary,
// Status, the Boot override with its AllowableValues, and the Reset action
// with its AllowableValues), Processors,
// Memory, Storage/1 with Drives (or SimpleStorage/1 only, as older BMCs
// serve drives), EthernetInterfaces (ports, and optionally a VLAN and the
// host interface's end, shaped as DMTF's public-rackmount1 mockup shapes
// them), Chassis/1 with Thermal (temperatures and fans) and Power (power
// supplies, power control), Managers/1, and log services under the system
// and the manager (Options.LogServices; by default one SEL under the
// manager), each with its ClearLog action and Entries (members expanded,
// paged with Members@odata.nextLink and $skip). Wrong or missing
// credentials answer 401 with a Redfish error object; unknown paths 404.
// Options.MaxSessions refuses a login past that many open sessions with
// 503, as iDRACs do; Options.Lockout locks the account after failed logins.
// Options.VirtualMedia adds a VirtualMedia collection under the system or
// the manager (a removable-disk slot, then a CD slot) with the InsertMedia
// and EjectMedia actions, or PATCHes of Image and Inserted only
// (Options.VirtualMediaPatchOnly); Options.HTTPBoot adds the Boot's
// HttpBootUri for a one-time UefiHttp boot. OnMediaChange tells a test host
// what the CD slot holds; PowerTransition says which image or URI a start
// booted.
//
// # Behaviour
//
// Reset: On, ForceOff, GracefulShutdown, ForceRestart, PowerCycle. Forced
// actions act at once; the others pass through PoweringOn or PoweringOff
// for Options.PowerTransition. ForceRestart of a host that is off answers
// 409, as common BMCs do. A PATCH of the system sets the boot override
// (BootSourceOverrideTarget among Options.BootTargets; Enabled Disabled,
// Once or Continuous; Mode where the system reports one; any other
// property is refused with 400). Two vendors' ways with the mode are
// Options: BootModeReadOnly refuses a PATCH that names it (HPE iLO 5,
// Dell 13th generation), BootModeResetWhenOmitted sets it to Legacy when a
// PATCH leaves it out (Supermicro). The next start of the host (On from off,
// a cycle, a restart, or SetPowerState) boots with it, and a Once override
// reads Disabled again after that start. The SEL holds Options.MaxLogEntries entries and
// then overwrites the oldest; a clear restarts Ids at 1, as many BMCs do.
// Entries carry the EntryType of their log service's description.
//
// # Test controls
//
// SetHealth(kind, name, health), SetFailurePredicted (a drive's own
// prediction, beside its health), AddLogEntry, AddLogEntryTo, ClearLog,
// SetPowerState, PowerState, Resets (every accepted ResetType, in order),
// BootOverride, PowerTransitions and OnPowerTransition (every change of
// the host's power with the boot target it started from: what a simulated
// server follows to start an install when it network-boots),
// Sessions, Logins (accepted and refused, the most sessions open at once),
// DropSessions, Requests; InjectFault(Fault{Kind, PathPrefix, Method, Count, Status,
// Latency}) with FaultUnauthorized, FaultServerError and FaultLatency,
// RemoveFault, ClearFaults, FaultFired; Server.GoAway and ComeBack close
// and reopen the listener, so connections are refused meanwhile.
//
// Package ipmisim, beside this one, runs OpenIPMI's ipmi_sim, a real IPMI
// 2.0 BMC, with the project's lan.conf, emulator commands and chassis
// control script.
package bmcsim
