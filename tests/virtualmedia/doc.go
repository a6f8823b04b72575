// Package virtualmedia boots the addon's virtual media image
// (pkg/bootmedia) for real: a QEMU machine with a CD drive holding the
// image, under OVMF (UEFI) and SeaBIOS (legacy), iPXE from the image
// applying a static address and fetching the claim's URL from the test's
// HTTP server. The machine's network is QEMU's user networking with
// restrict=on (nothing leaves the machine; the one way out is a forward to
// the test's server), and QEMU's filter-dump captures every frame on it:
// the test counts the DHCP packets, which must be none.
//
// TestVirtualMediaThroughTheBMC takes the same path through the addon's
// BMC calls (pkg/bmc's MediaClient) against the test BMC of package
// tests/sim/qemubmc: what the BMC offers, InsertMedia of the image's URL,
// a one-time boot from Cd, power on, the eject and the power-off. The BMC
// starts the machine itself at the power-on, reads the image from the URL
// it was given and puts it in the CD drive over QMP; the eject takes the
// medium out of the running machine and the power-off ends it.
package virtualmedia
