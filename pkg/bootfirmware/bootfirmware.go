// Package bootfirmware chooses the firmware interface, UEFI or Legacy, a
// server people own network-boots with: from its Inventory, its pool and
// what its BMC can tell. The pool's chain asks the BMC for it; the
// real-machine tests boot with the same choice.
package bootfirmware

import (
	"fmt"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
)

// Problem says why no firmware can be chosen: a condition reason and a
// message for a person.
type Problem struct {
	Reason, Message string
}

// Choice is the boot firmware chosen for a server's network boot, and
// why.
type Choice struct {
	// Want is what the BMC is asked for; bmc.BootFirmwareAny keeps the
	// server's own mode (a Redfish BMC sends back the one it reports).
	Want bmc.BootFirmware
	// Why says where the choice came from, for people.
	Why string
}

// archARM64 is Seeder's word for an arm64 server (spec.arch).
const archARM64 = "arm64"

// For chooses the firmware the server of inv network-boots with
// for a pool whose spec.servers.bootFirmware is pool: arm64 servers boot
// UEFI only; then the Inventory's annotation; then the pool's field; then
// the server's own mode where its BMC reports one (Redfish); else UEFI,
// what servers sold today boot (many only it), for an IPMI BMC cannot say.
// An annotation that names no firmware, or Legacy for an arm64 server, is
// a Problem: nothing is asked of the BMC until it is fixed.
func For(inv *seederv1alpha1.Inventory, pool string) (Choice, *Problem) {
	note, annotated := inv.Annotations[equinixv1.AnnotationBootFirmware]
	arm := inv.Spec.Arch == archARM64
	if annotated && note != equinixv1.BootFirmwareUEFI && note != equinixv1.BootFirmwareLegacy {
		return Choice{}, &Problem{equinixv1.ReasonBootFirmwareInvalid, fmt.Sprintf(
			"Inventory %s/%s: annotation %s is %q; write %s or %s (or remove it)", inv.Namespace, inv.Name,
			equinixv1.AnnotationBootFirmware, note, equinixv1.BootFirmwareUEFI, equinixv1.BootFirmwareLegacy)}
	}
	switch {
	case arm && note == equinixv1.BootFirmwareLegacy:
		return Choice{}, &Problem{equinixv1.ReasonBootFirmwareInvalid, fmt.Sprintf(
			"Inventory %s/%s: annotation %s is Legacy, but its spec.arch is arm64, and arm64 servers boot UEFI only; write UEFI or remove it",
			inv.Namespace, inv.Name, equinixv1.AnnotationBootFirmware)}
	case arm:
		return Choice{bmc.BootFirmwareUEFI, "arm64 servers boot UEFI only"}, nil
	case annotated:
		return Choice{toBMC(note), fmt.Sprintf("the Inventory's annotation %s", equinixv1.AnnotationBootFirmware)}, nil
	case pool != "":
		return Choice{toBMC(pool), "the pool's spec.servers.bootFirmware"}, nil
	case redfish(inv):
		return Choice{bmc.BootFirmwareAny, "the server's own boot mode, as its BMC reports it"}, nil
	}
	return Choice{bmc.BootFirmwareUEFI, "the default, for an IPMI BMC cannot report the server's boot mode"}, nil
}

// Describe says what the BMC was told (used, as BootOnce returned it) and
// why, for an Event or a condition.
func (f Choice) Describe(used bmc.BootFirmware) string {
	switch {
	case used != bmc.BootFirmwareAny:
		return fmt.Sprintf("in %s mode (%s)", Name(used), f.Why)
	case f.Want != bmc.BootFirmwareAny:
		return fmt.Sprintf("as its firmware is set: %s was asked for (%s), but its BMC takes no boot mode", Name(f.Want), f.Why)
	}
	return "as its firmware is set: its BMC reports no boot mode"
}

// Name is a firmware in the API's words ("" for none).
func Name(fw bmc.BootFirmware) string {
	switch fw {
	case bmc.BootFirmwareUEFI:
		return equinixv1.BootFirmwareUEFI
	case bmc.BootFirmwareLegacy:
		return equinixv1.BootFirmwareLegacy
	}
	return ""
}

func toBMC(fw string) bmc.BootFirmware {
	if fw == equinixv1.BootFirmwareLegacy {
		return bmc.BootFirmwareLegacy
	}
	return bmc.BootFirmwareUEFI
}

// redfish reports whether the server's BMC speaks Redfish: the protocol
// that answered, once one did (port 623 tries Redfish, then IPMI); before
// that, only when Redfish is all the connection allows.
func redfish(inv *seederv1alpha1.Inventory) bool {
	if hw := inv.Status.Hardware; hw != nil && hw.BMC != nil && hw.BMC.Protocol != "" {
		return hw.BMC.Protocol == seederv1alpha1.ProtocolRedfish
	}
	for _, c := range inv.Spec.BaseboardManagementSpec.Connection.Candidates() {
		if c.Protocol != seederv1alpha1.ProtocolRedfish {
			return false
		}
	}
	return true
}
