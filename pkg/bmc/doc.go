// Package bmc is the seam between the addon and the baseboard management
// controllers of nodes it did not provision: it reads a server's inventory,
// health and system event log and powers it on, off or through a cycle,
// over Redfish or IPMI. It is the only package that imports a BMC library;
// callers see Endpoint, Client and *Error.
//
// # Libraries
//
// Redfish goes through github.com/stmcginnis/gofish (v0.23.0), the Go
// Redfish client Seeder itself uses, kept current with the DMTF schema
// (its schemas package is generated from it). IPMI goes through
// github.com/bougou/go-ipmi (v0.9.1), a pure-Go IPMI 2.0 client: bmclib,
// the other candidate, runs the ipmitool binary for IPMI and pins an old
// gofish, and a controller image should not carry ipmitool.
//
// # Use
//
//	c, err := bmc.Dial(ctx, bmc.Endpoint{Protocol: bmc.ProtocolRedfish,
//		Host: "10.0.0.5", Username: user, Password: redact.Sensitive(pw), CABundle: ca})
//	inv, err := c.Inventory(ctx)
//	h, err := c.Health(ctx)                  // diff with the last reading
//	entries, next, err := c.LogEntries(ctx, cursorFromStatus)
//	err = c.Power(ctx, bmc.PowerActionReboot) // one command, never retried
//	_, err = c.BootOnce(ctx, bmc.BootNetwork, bmc.BootFirmwareUEFI) // next start only
//	defer c.Close()
//
// Every error is a *failure.Error of Seam; failure.ClassOf gives its class
// (Unreachable, Unauthorized, ProtocolMismatch, TLS, Unsupported,
// Transient, Invalid).
// Messages never hold the password: Endpoint and redact.Sensitive print it
// as "<redacted>", and errors are scrubbed before they are built.
//
// # Security
//
// TLS certificates are verified against the system roots plus CABundle;
// InsecureSkipVerify turns that off only when set, and setting both is
// refused. No proxy from the environment is used: a BMC is reached
// directly on its management network. A Redfish Client logs in once with a
// session (basic auth only when the BMC has no session service) and logs
// out on Close; a session the BMC dropped is reopened once (Redfish: a 401
// on a session; IPMI: a read left unanswered on a session opened before
// it). IPMI offers cipher suites 17 and 3 only, one at a time: a suite the
// BMC lacks moves on to the next, a refused password ends the login (one
// failed login, not one per suite: BMCs lock accounts). go-ipmi goes on
// with whatever algorithms the BMC's Open Session Response names; here the
// answer is checked against the request on the library's socket (its
// proxy-dialer hook), and an answer with other algorithms (another suite's,
// or none at all) is refused before the password is used: another suite is
// asked for, and a BMC that downgrades every one is a ProtocolMismatch
// saying so.
//
// # Power
//
// Power sends exactly one command: Redfish Reset with On, ForceOff (the
// hard off Seeder's shutdown uses) or PowerCycle (ForceRestart when the BMC
// lists no PowerCycle), IPMI Chassis Control up, down or cycle. IPMI
// retransmission is off for it, since a repeated datagram is a second
// command. A Redfish request refused with 401 because the BMC dropped the
// session was not carried out; it is sent again once after a new login.
//
// # One-time network boot
//
// BootOnce is one command too. Redfish: a PATCH of the ComputerSystem's
// Boot with BootSourceOverrideTarget Pxe and BootSourceOverrideEnabled
// Once, plus BootSourceOverrideMode (UEFI or Legacy) when a firmware is
// asked for and the system reports the property, then a read of it back;
// a system whose AllowableValues lack Pxe is refused before anything is
// sent. IPMI: Set System Boot Options parameter 5 alone (valid, next boot
// only, force PXE, the EFI bit for UEFI). What a BMC refuses (a 400 or 405,
// a read back without the override, a completion code) is Unsupported,
// with a message saying what to change. Inventory reports the host's
// SMBIOS UUID (SystemUUID) beside its NICs' MACs: what a boot endpoint
// recognises the server by.
//
// # Health
//
// Redfish health comes from the chassis Thermal (temperatures, fans) and
// Power (power supplies) resources and the system's processors, memory and
// drives, IPMI health from the sensors of the SDR repository (thresholds,
// and the fault offsets of discrete sensors) and the chassis status fault
// bits. A subsystem without a reading is Unknown. Messages name the parts
// that are not OK and never carry readings, so an unchanged BMC reads the
// same twice and a controller emits an Event only on a change.
//
// # System event log and the cursor
//
// IPMI has one event log, the SEL. A Redfish BMC may keep several log
// services under the system and its managers, named and typed in many
// ways; LogEntries reads every one that holds hardware events: by name
// where that says what it is (SEL, Sel, Log1, EventLog, IEL, IML are read;
// iDRAC's Lclog of configuration changes, FaultList, and the BMC's audit,
// security and journal logs are not), else by LogEntryType (SEL and Event
// are read; for Multiple only its SEL and Event entries; OEM and CXL not),
// else by the entries' EntryType (SEL or Event). A BMC with no such log is
// Unsupported, and the message names what it has and why each was left out.
//
// LogEntries returns entries strictly after the cursor, oldest first, and
// the next cursor; it is opaque (base64 JSON) and meant to be kept in a
// status field. It records, per log, the last entry handed out (ID, time, a
// digest of its content) and, for IPMI, the SEL's last erase time. On the
// next poll:
//
//   - the erase time changed: the SEL was cleared, every entry is new;
//   - the last entry is still there: what follows it is new;
//   - it is gone (a Redfish log cleared, or a log that wrapped): entries at
//     or after its time are new; with no usable times, all are.
//
// So the same cursor never yields an entry twice, a cleared or wrapped log
// is neither replayed nor skipped, and a restarted controller resumes from
// its stored cursor. What cannot be done: entries written and cleared
// between two polls are lost, and a BMC that deletes single entries could
// hand out an entry of the same second again. Redfish entries are ordered
// by Created time, then numeric Id; IPMI entries in SEL order. IPMI times
// before the BMC's clock was set are relative and reported as zero.
//
// # Errors for wrong protocols
//
// A Redfish Dial to a port that refuses TCP sends an RMCP presence ping to
// it: an answer means an IPMI port (ProtocolMismatch). An IPMI Dial to a
// port that refuses UDP tries TCP: an open port means HTTPS, most likely
// Redfish (ProtocolMismatch). A silent UDP port cannot be told from a dead
// host and is Unreachable. An IPMI SEL record whose event the IPMI tables
// do not name says its reading type and offset.
package bmc
