package bmc

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
)

// The override mode is sent to a system that reports the property:
// the one asked for, or the system's own sent back when none is; a system
// without it gets none, and BootOnce says which firmware it asked for.
func TestRedfishBootOverrideMode(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		opts     bmcsim.Options
		fw       BootFirmware
		wantMode string
		wantUsed BootFirmware
	}{
		"UEFI asked, mode reported":         {bmcsim.Options{BootMode: "Legacy"}, BootFirmwareUEFI, "UEFI", BootFirmwareUEFI},
		"legacy asked, mode reported":       {bmcsim.Options{}, BootFirmwareLegacy, "Legacy", BootFirmwareLegacy},
		"nothing asked: the mode stays":     {bmcsim.Options{BootMode: "Legacy"}, BootFirmwareAny, "Legacy", BootFirmwareLegacy},
		"nothing asked, UEFI system":        {bmcsim.Options{}, BootFirmwareAny, "UEFI", BootFirmwareUEFI},
		"UEFI asked, no mode on the system": {bmcsim.Options{NoBootMode: true}, BootFirmwareUEFI, "", BootFirmwareAny},
	} {
		t.Run(name, func(t *testing.T) {
			sim, c := shapedBMC(t, tc.opts)
			used, err := c.BootOnce(ctx, BootNetwork, tc.fw)
			require.NoError(t, err)
			assert.Equal(t, tc.wantUsed, used)
			assert.Equal(t, bmcsim.BootOverride{Target: bmcsim.BootPxe, Enabled: bmcsim.BootOnce, Mode: tc.wantMode}, sim.BootOverride())
		})
	}
}

// Vendors' ways with the mode. A BMC that sets a mode left out back to
// Legacy (Supermicro) keeps a UEFI server UEFI, for the mode is always
// sent. A BMC that refuses any patch naming the mode (HPE iLO 5, Dell's
// 13th generation) gets the override again without it when the server is
// in the mode wanted, and is Unsupported, saying where to change it, when
// it is not: the override it would take boots the other firmware.
func TestRedfishBootModeVendorShapes(t *testing.T) {
	ctx := context.Background()
	patches := func(sim *bmcsim.BMC) int { return countOf(sim.RequestLog(), "PATCH "+systemURI) }

	sim, c := shapedBMC(t, bmcsim.Options{BootModeResetWhenOmitted: true})
	used, err := c.BootOnce(ctx, BootNetwork, BootFirmwareAny)
	require.NoError(t, err)
	assert.Equal(t, BootFirmwareUEFI, used)
	assert.Equal(t, bmcsim.BootOverride{Target: bmcsim.BootPxe, Enabled: bmcsim.BootOnce, Mode: "UEFI"}, sim.BootOverride(), "still UEFI")
	assert.Equal(t, 1, patches(sim))

	for _, fw := range []BootFirmware{BootFirmwareUEFI, BootFirmwareAny} {
		sim, c = shapedBMC(t, bmcsim.Options{BootModeReadOnly: true})
		used, err = c.BootOnce(ctx, BootNetwork, fw)
		require.NoError(t, err, "asked %q", fw)
		assert.Equal(t, BootFirmwareUEFI, used)
		assert.Equal(t, bmcsim.BootOverride{Target: bmcsim.BootPxe, Enabled: bmcsim.BootOnce, Mode: "UEFI"}, sim.BootOverride())
		assert.Equal(t, 2, patches(sim), "refused with the mode, taken without")
	}

	sim, c = shapedBMC(t, bmcsim.Options{BootModeReadOnly: true})
	used, err = c.BootOnce(ctx, BootNetwork, BootFirmwareLegacy)
	require.Equal(t, failure.Unsupported, failure.ClassOf(err), "%v", err)
	assert.Equal(t, BootFirmwareLegacy, used)
	assert.Contains(t, err.Error(), "refused boot mode Legacy")
	assert.Contains(t, err.Error(), "the server is set to UEFI: set its boot mode to Legacy in the server's firmware settings")
	assert.Equal(t, bmcsim.BootNone, sim.BootOverride().Target, "no override that would boot UEFI")
	assert.Equal(t, 1, patches(sim))
}

// A system without a network boot target is told about before anything is
// sent; one that takes the override and does not keep it is caught by the
// read back. Both say what to do.
func TestRedfishBootOverrideRefused(t *testing.T) {
	ctx := context.Background()
	sim, c := shapedBMC(t, bmcsim.Options{BootTargets: []string{bmcsim.BootNone, bmcsim.BootHdd}})
	_, err := c.BootOnce(ctx, BootNetwork, BootFirmwareAny)
	require.Equal(t, failure.Unsupported, failure.ClassOf(err), "%v", err)
	assert.Contains(t, err.Error(), "enable PXE")
	assert.Zero(t, countOf(sim.RequestLog(), "PATCH "+systemURI), "nothing sent")

	sim, c = shapedBMC(t, bmcsim.Options{ForgetBootOverride: true})
	_, err = c.BootOnce(ctx, BootNetwork, BootFirmwareAny)
	require.Equal(t, failure.Unsupported, failure.ClassOf(err), "%v", err)
	assert.Contains(t, err.Error(), `reads back target "None"`)
	assert.Equal(t, 1, countOf(sim.RequestLog(), "PATCH "+systemURI), "sent once, not again")
}

// A patch refused for a dropped session (401) was not carried out: it is
// sent once more on a new session, and the override is in place.
func TestRedfishBootOverrideAfterDroppedSession(t *testing.T) {
	sim, c := shapedBMC(t, bmcsim.Options{})
	sim.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultUnauthorized, Method: http.MethodPatch, Count: 1})
	_, err := c.BootOnce(context.Background(), BootNetwork, BootFirmwareAny)
	require.NoError(t, err)
	assert.Equal(t, bmcsim.BootPxe, sim.BootOverride().Target)
	assert.Equal(t, 2, countOf(sim.RequestLog(), "PATCH "+systemURI), "the refused one and the one carried out")
}

// The boot flags are one bare parameter 5: valid, next boot only, PXE, and
// the EFI bit only when UEFI is asked for.
func TestIPMIBootFlags(t *testing.T) {
	tg, sim := ipmiTarget(t)
	ctx := context.Background()
	c := dial(t, tg.ep)
	asked := []BootFirmware{BootFirmwareAny, BootFirmwareUEFI, BootFirmwareLegacy}
	told := []BootFirmware{BootFirmwareLegacy, BootFirmwareUEFI, BootFirmwareLegacy}
	for i, fw := range asked {
		used, err := c.BootOnce(ctx, BootNetwork, fw)
		require.NoError(t, err)
		assert.Equal(t, told[i], used, "asked %q: what the flags told the BMC", fw)
	}
	// The BMC's trace reaches the test a moment after its answer.
	want := []string{"05 80 04 00 00 00", "05 a0 04 00 00 00", "05 80 04 00 00 00"}
	assert.Eventually(t, func() bool { return len(bootOptionSets(sim)) == len(want) }, 5*time.Second, 20*time.Millisecond)
	assert.Equal(t, want, bootOptionSets(sim))
}

// A BMC that refuses the boot flags (ipmi_sim without chassis control
// answers 0xCC) is Unsupported, saying what to do; the request was sent
// once.
func TestIPMIBootFlagsRefused(t *testing.T) {
	sim := ipmisim.Require(t, ipmisim.Options{Username: testUser, Password: testPassword, NoChassisControl: true})
	c := dial(t, Endpoint{Protocol: ProtocolIPMI, Host: sim.Host, Port: sim.Port, Username: testUser, Password: testPassword})
	_, err := c.BootOnce(context.Background(), BootNetwork, BootFirmwareAny)
	require.Equal(t, failure.Unsupported, failure.ClassOf(err), "%v", err)
	assert.Contains(t, strings.ToLower(err.Error()), "0xcc")
	assert.Contains(t, err.Error(), "boot from the network in its firmware")
	assert.Eventually(t, func() bool { return len(bootOptionSets(sim)) == 1 }, 5*time.Second, 20*time.Millisecond)
}
