// Package ipmisim runs OpenIPMI's ipmi_sim (Debian package openipmi) as a
// real IPMI 2.0 BMC for tests. go-ipmi's embeddable BMC has no SEL and is
// the library under test's own counterpart; ipmi_sim is an independent
// implementation of RMCP+, the SEL, sensors, FRU and chassis control.
//
// The files it runs with live in files/: lan.conf.tmpl (one LAN channel on
// a loopback UDP port, an administrator, the host's GUID, a console port),
// bmc.emu (the BMC, its SEL and six sensors: temperature and fan
// thresholds; power supply, drive slot, DIMM and processor discrete
// states) and chassis_control (the host's power and boot device). Start
// renders them into a directory with inventory.emu, the FRU data and SDRs
// built by go-ipmi's packers, and starts ipmi_sim on free loopback ports,
// in a process group of its own that dies with the test process.
//
// The host is a power switch (a file of the state directory), or with
// Options.Host a program the chassis control starts on power on, choosing
// its command line by the boot device set through Set System Boot Options
// (PXE or not), and ends on power off: how tests/vmrig makes a QEMU virtual
// machine the host. ipmi_sim keeps only the device of a boot override, not
// its persistence, so every override is for the next start only. Get
// System GUID answers Options.UUID in SMBIOS byte order.
//
// Tests drive it through the emulator console (Command, AddSEL,
// SetSensorValue, SetSensorBit), read and set the power (PowerOn,
// SetPower), read the boot override (BootOverride), follow every change of
// the host's power with the boot target it started from
// (OnPowerTransition, PowerTransitions: the same type as the Redfish
// responder's, bmcsim.PowerTransition), and count the Chassis Control
// commands the BMC received from its message trace (ChassisControls). Stop
// sends "quit" on the console and kills the process by its PID if it is
// still there after five seconds; a hosted Sim's process group is killed
// whole. Nothing is ever stopped by name.
//
// Require is the test entry: without ipmi_sim it fails under CI=true and
// skips otherwise, like the cluster tests. scripts/bmc-tools installs
// openipmi and ipmitool; scripts/test runs it before go test.
package ipmisim
