// Package netboot runs the DHCP configurations docs/network-boot.md shows,
// read from the page itself, so that the page cannot drift from what works.
//
// The dnsmasq configurations run for real: dnsmasq (Debian's package) in a
// network namespace the test makes, on a bridge named as the page's
// interface and holding the page's addresses, serves a QEMU machine on a tap
// of that bridge; the boot endpoint (pkg/bootendpoint's handler with a claim
// of the machine) listens at the page's endpoint address in the same
// namespace. One machine boots legacy BIOS, whose NIC's ROM is iPXE and takes
// the chain URL from DHCP (iPXE to the endpoint); one boots UEFI (OVMF, no
// ROM on its NIC), whose own PXE client fetches Debian's iPXE binary over
// dnsmasq's TFTP, which then takes the chain URL (PXE to iPXE to the
// endpoint). Nothing leaves the namespaces: the machines have no route out,
// and the installer's files come from a mirror the test serves.
//
// The ISC dhcpd and Kea configurations pass the servers' own configuration
// checks (dhcpd -t, kea-dhcp4 -t) and then serve a UEFI machine for real,
// with the page's TFTP-only dnsmasq. A UEFI machine with Secure Boot on
// (OVMF with Microsoft's keys) shows what the page says of unsigned iPXE:
// fetched over TFTP, refused, and the endpoint never asked.
//
// The tests need root (network namespaces, taps) and the tools
// scripts/vm-tools and scripts/netboot-tools install; without them they
// skip, and fail under CI=true.
package netboot
