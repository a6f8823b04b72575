// Package vmrig is the real machine stand-in: a QEMU virtual machine whose
// power and boot device are in the hands of a real IPMI BMC (OpenIPMI's
// ipmi_sim, through package ipmisim), and which network-boots with QEMU's
// real iPXE ROM into HTTP served by the test.
//
//	m := vmrig.Require(t, vmrig.Options{MAC: "52:54:00:29:00:01", UUID: id, Handler: h})
//	c, _ := bmc.Dial(ctx, m.Endpoint)             // the project's own BMC client
//	c.BootOnce(ctx, bmc.BootNetwork, bmc.BootFirmwareLegacy)
//	c.Power(ctx, bmc.PowerActionOn)                // QEMU starts, iPXE asks h for BootFile
//	m.Requests()                                   // every request, as iPXE sent it
//
// # How it is put together
//
// ipmi_sim's chassis control starts QEMU on power on and ends it on power
// off; QEMU's own channel to a BMC carries no boot device, so the chassis
// control chooses the command line: with a one-time PXE boot set, "-boot
// n" and the NIC's iPXE ROM; without, "-boot c" and no ROM, so the VM
// (which has no disk) stops at "No bootable device." and asks nothing. The
// VM runs under TCG (no KVM needed) with 128 MiB, one virtio NIC with
// Options.MAC and the SMBIOS UUID Options.UUID, which ipmi_sim's Get System
// GUID reports too.
//
// The guest's network is QEMU's user networking with restrict=on: it
// reaches nothing but one address, GuestURL (10.0.2.100:80), forwarded to
// the test's HTTP server on a loopback port. QEMU's DHCP names
// GuestURL+BootFile as the boot file. So a script that names any other
// host (the Equinix scripts name GitHub and Equinix's metadata service)
// reaches nothing. That forward is one TCP stream, opened when QEMU
// starts, which the guest's connections share: the server keeps it open
// (no idle timeout), and a power cycle starts a new one.
//
// This iPXE (Debian's ipxe-qemu, 2019) has no HTTPS and no "params"; its
// boot takes about 5.4 s to the first request (a fixed 2 s banner, then
// DHCP waiting 3 s for proxy offers), about 3.5 s of CPU. A kernel served
// to it must be at least 1 MiB, or iPXE runs it as a PXE program that
// spins a core: HaltingKernel is one that prints the command line iPXE
// gave it on the serial console and halts.
//
// # Processes
//
// ipmi_sim runs in its own process group with a parent-death signal;
// QEMU, started by the chassis control, stays in that group (and a
// watchdog ends it within a second should ipmi_sim die). The test's
// cleanup kills the group; nothing is stopped by name.
//
// # Tools
//
// Require skips the test without qemu-system-x86_64, the iPXE ROMs or
// ipmi_sim, and fails it under CI=true. scripts/vm-tools installs them
// (Debian qemu-system-x86 and ipxe-qemu), and scripts/test runs it.
package vmrig
