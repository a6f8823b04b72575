// Package bootmedia builds a claim's boot image for virtual media: a
// small El Torito ISO whose EFI system partition holds iPXE's EFI build
// and a script (autoexec.ipxe, which that build runs from its own
// medium) that brings up the management NIC by its MAC, with a static
// address or DHCP, and chains to the boot endpoint's per-claim URL; with
// ISOLINUX and iPXE's legacy build beside it, the same image boots a
// BIOS. The image is written with go-diskfs, never by a shelled-out tool,
// and holds no secret: the chain URL is all it knows, and it dies with
// the claim. docs/virtual-media.md says why this loader.
package bootmedia
