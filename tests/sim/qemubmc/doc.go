// Package qemubmc is a test BMC with virtual media whose host is a real
// machine: the project's Redfish responder (bmcsim) in front of a QEMU
// machine under OVMF (UEFI), driven over QMP, so that what a client tells
// the BMC happens to the machine, as on a server's BMC:
//
//   - power On starts QEMU paused (-S) with an empty CD drive, puts the
//     mounted image in the drive (QMP blockdev-change-medium) when the
//     start is from the one-time Cd override, and lets it run (cont);
//   - ForceRestart and PowerCycle reset the running machine
//     (system_reset), the drive loaded again as the override then says;
//   - ForceOff and the other offs end QEMU (QMP quit) and reap it;
//   - InsertMedia and EjectMedia while the machine runs change the
//     medium in its drive (blockdev-change-medium, eject).
//
// The BMC reads the image from the URL it was given, as a BMC's virtual
// CD does. A URL that names the boot endpoint's address as the machine
// knows it (Options.Guest, inside QEMU's user network) is one only the
// machine reaches; the BMC maps it to where the endpoint listens
// (Options.Host): on a real network the BMC and the server reach one
// address.
//
// The machine's network stays on this machine: QEMU's user networking
// with restrict=on, whose one way out is a forward of Options.Guest to
// Options.Host; its NIC has no option ROM, so the firmware cannot boot
// from the network, and the CD is the only boot device it is told of.
// QEMU's filter-dump captures every frame of that network for each life
// of the machine (Life.Capture, CountFrames).
package qemubmc
