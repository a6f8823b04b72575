package bootfirmware

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
)

func firmwareInventory(port int, arch, note string) *seederv1alpha1.Inventory {
	inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Name: "rack1-u07", Namespace: seederv1alpha1.InventoryNamespace}}
	inv.Spec.Arch = arch
	inv.Spec.BaseboardManagementSpec.Connection.Port = port
	if note != "" {
		inv.Annotations = map[string]string{equinixv1.AnnotationBootFirmware: note}
	}
	return inv
}

// arm64 first, then the Inventory, then the pool, then the server's own
// mode where the BMC can tell it (Redfish), else UEFI.
func TestBootFirmwareChoice(t *testing.T) {
	const ipmi, redfish = 623, 443
	for name, tc := range map[string]struct {
		inv  *seederv1alpha1.Inventory
		pool string
		want bmc.BootFirmware
		why  string
	}{
		"IPMI, nothing said":           {firmwareInventory(ipmi, "", ""), "", bmc.BootFirmwareUEFI, "the default"},
		"Redfish, nothing said":        {firmwareInventory(redfish, "amd64", ""), "", bmc.BootFirmwareAny, "the server's own boot mode"},
		"the pool says Legacy":         {firmwareInventory(ipmi, "", ""), equinixv1.BootFirmwareLegacy, bmc.BootFirmwareLegacy, "the pool's"},
		"the pool, on Redfish":         {firmwareInventory(redfish, "", ""), equinixv1.BootFirmwareUEFI, bmc.BootFirmwareUEFI, "the pool's"},
		"the Inventory over the pool":  {firmwareInventory(ipmi, "", "Legacy"), equinixv1.BootFirmwareUEFI, bmc.BootFirmwareLegacy, "annotation"},
		"arm64 over the pool's Legacy": {firmwareInventory(ipmi, "arm64", ""), equinixv1.BootFirmwareLegacy, bmc.BootFirmwareUEFI, "arm64"},
		"arm64 on Redfish":             {firmwareInventory(redfish, "arm64", ""), "", bmc.BootFirmwareUEFI, "arm64"},
	} {
		t.Run(name, func(t *testing.T) {
			fw, problem := For(tc.inv, tc.pool)
			require.Nil(t, problem)
			assert.Equal(t, tc.want, fw.Want)
			assert.Contains(t, fw.Why, tc.why)
		})
	}
}

// An annotation that names no firmware, or Legacy for arm64, is refused,
// saying what to write.
func TestBootFirmwareAnnotationRefused(t *testing.T) {
	for note, want := range map[string]string{
		"uefi": `annotation equinix.harvesterhci.io/boot-firmware is "uefi"; write UEFI or Legacy`,
		"BIOS": `is "BIOS"; write UEFI or Legacy`,
		"":     `is ""; write UEFI or Legacy`,
	} {
		inv := firmwareInventory(623, "", "x")
		inv.Annotations[equinixv1.AnnotationBootFirmware] = note
		_, problem := For(inv, "")
		require.NotNil(t, problem, note)
		assert.Equal(t, equinixv1.ReasonBootFirmwareInvalid, problem.Reason)
		assert.Contains(t, problem.Message, want)
	}
	_, problem := For(firmwareInventory(443, "arm64", "Legacy"), "")
	require.NotNil(t, problem)
	assert.Contains(t, problem.Message, "arm64 servers boot UEFI only")
}

// What the Event says: the firmware told, or that the BMC takes none.
func TestBootFirmwareDescribed(t *testing.T) {
	fw := Choice{Want: bmc.BootFirmwareAny, Why: "the server's own boot mode, as its BMC reports it"}
	assert.Equal(t, "in Legacy mode (the server's own boot mode, as its BMC reports it)", fw.Describe(bmc.BootFirmwareLegacy))
	assert.Equal(t, "as its firmware is set: its BMC reports no boot mode", fw.Describe(bmc.BootFirmwareAny))
	fw = Choice{Want: bmc.BootFirmwareUEFI, Why: "the pool's spec.servers.bootFirmware"}
	assert.Equal(t, "as its firmware is set: UEFI was asked for (the pool's spec.servers.bootFirmware), but its BMC takes no boot mode",
		fw.Describe(bmc.BootFirmwareAny))
}
