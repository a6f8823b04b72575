// Package machine is the seam between the hardware steps
// (pkg/controller/internal/hardware) and what manages a server's hardware:
// the Equinix Metal API for the servers the addon provisions (package
// metaldriver), a BMC over Redfish or IPMI for nodes it did not. It is
// named for the one thing it offers, a Machine per server, so that the
// steps (hardware) and the seam they talk through are told apart.
//
// The steps ask one Machine per server for four things: its facts (maker,
// model, serial number, CPUs, memory, drives, NICs, and when its provider
// takes it back), its events after a cursor, its power state, and one power
// action. Everything here is provider-neutral: a driver maps its own types
// and errors onto these, and the chain never sees an SDK or a protocol.
//
// A driver decides how a Machine gets its answers. The Metal driver serves
// every machine of a project from one paginated project event list per
// interval and says so through EventBatch.RecheckAfter (zero: it wakes the
// machine's owner itself); a BMC driver polls each BMC at the interval of
// that BMC and asks to be called again when the next poll is due.
package machine
