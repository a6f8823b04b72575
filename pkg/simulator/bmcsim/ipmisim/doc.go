// Package ipmisim runs OpenIPMI's ipmi_sim (Debian package openipmi) as a
// real IPMI 2.0 BMC for tests. go-ipmi's embeddable BMC has no SEL and is
// the library under test's own counterpart; ipmi_sim is an independent
// implementation of RMCP+, the SEL, sensors, FRU and chassis control.
//
// The files it runs with live in files/: lan.conf.tmpl (one LAN channel on
// a loopback UDP port, an administrator, a console port), bmc.emu (the BMC,
// its SEL and six sensors: temperature and fan thresholds; power supply,
// drive slot, DIMM and processor discrete states) and chassis_control
// (keeps the host power in a file of the state directory). Start renders
// them into a directory with inventory.emu, the FRU data and SDRs built by
// go-ipmi's packers, and starts ipmi_sim on free loopback ports.
//
// Tests drive it through the emulator console (Command, AddSEL,
// SetSensorValue, SetSensorBit), read and set the power file (PowerOn,
// SetPower) and count the Chassis Control commands the BMC received from
// its message trace (ChassisControls). Stop sends "quit" on the console and
// kills the process by its PID if it is still there after five seconds;
// nothing is ever stopped by name.
//
// Require is the test entry: without ipmi_sim it fails under CI=true and
// skips otherwise, like the cluster tests. scripts/bmc-tools installs
// openipmi and ipmitool; scripts/test runs it before go test.
package ipmisim
