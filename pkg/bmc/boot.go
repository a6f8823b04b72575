package bmc

import (
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

// BootDevice is what the host boots from on its next start.
type BootDevice string

// Boot devices a one-time override can name.
const (
	// BootNetwork boots from the network: the NIC's PXE firmware asks DHCP
	// for a boot file (Redfish target Pxe, IPMI device selector "force PXE").
	BootNetwork BootDevice = "network"
	// BootCD boots from the CD/DVD drive, a virtual one where the BMC
	// mounted an image (Redfish target Cd, IPMI "force boot from CD/DVD").
	BootCD BootDevice = "cd"
)

// BootFirmware says which firmware interface the override boots with.
type BootFirmware string

// Firmware interfaces.
const (
	// BootFirmwareAny keeps the server's own: Redfish sends back the
	// BootSourceOverrideMode the system reports (some BMCs set a mode
	// left out of the patch back to their default). IPMI has no way to read it,
	// so there it sends the EFI bit clear, the legacy (PC compatible)
	// boot, as ipmitool's "chassis bootdev pxe" does without
	// options=efiboot: choose UEFI or Legacy for an IPMI BMC.
	BootFirmwareAny BootFirmware = ""
	// BootFirmwareUEFI asks for a UEFI boot (Redfish mode UEFI, IPMI EFI bit).
	BootFirmwareUEFI BootFirmware = "uefi"
	// BootFirmwareLegacy asks for a BIOS boot (Redfish mode Legacy, IPMI
	// EFI bit clear).
	BootFirmwareLegacy BootFirmware = "legacy"
)

func (d BootDevice) valid() bool { return d == BootNetwork || d == BootCD }

func (f BootFirmware) valid() bool {
	return f == BootFirmwareAny || f == BootFirmwareUEFI || f == BootFirmwareLegacy
}

// checkBoot refuses what no BMC is asked for.
func checkBoot(ep Endpoint, d BootDevice, f BootFirmware) error {
	if !d.valid() {
		return newError("BootOnce", ep, failure.Invalid, fmt.Sprintf("unknown boot device %q; use %q or %q", string(d), BootNetwork, BootCD), nil)
	}
	if !f.valid() {
		return newError("BootOnce", ep, failure.Invalid, fmt.Sprintf("unknown boot firmware %q; use %q, %q or nothing", string(f), BootFirmwareUEFI, BootFirmwareLegacy), nil)
	}
	return nil
}

// canonicalUUID is a UUID as iPXE prints ${uuid}: lower case, hyphenated.
// A value that is no UUID, or all zeros (firmware that never set one),
// is no identity and reads as empty.
func canonicalUUID(s string) string {
	u, err := uuid.Parse(strings.TrimSpace(s))
	if err != nil || u == uuid.Nil {
		return ""
	}
	return u.String()
}
