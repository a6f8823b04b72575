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

// The override mode is sent only to a system that reports the property,
// and only when a firmware is asked for.
func TestRedfishBootOverrideMode(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		opts     bmcsim.Options
		fw       BootFirmware
		wantMode string
	}{
		"UEFI asked, mode reported":         {bmcsim.Options{BootMode: "Legacy"}, BootFirmwareUEFI, "UEFI"},
		"legacy asked, mode reported":       {bmcsim.Options{}, BootFirmwareLegacy, "Legacy"},
		"nothing asked: the mode stays":     {bmcsim.Options{BootMode: "Legacy"}, BootFirmwareAny, "Legacy"},
		"UEFI asked, no mode on the system": {bmcsim.Options{NoBootMode: true}, BootFirmwareUEFI, ""},
	} {
		t.Run(name, func(t *testing.T) {
			sim, c := shapedBMC(t, tc.opts)
			require.NoError(t, c.BootOnce(ctx, BootNetwork, tc.fw))
			assert.Equal(t, bmcsim.BootOverride{Target: bmcsim.BootPxe, Enabled: bmcsim.BootOnce, Mode: tc.wantMode}, sim.BootOverride())
		})
	}
}

// A system without a network boot target is told about before anything is
// sent; one that takes the override and does not keep it is caught by the
// read back. Both say what to do.
func TestRedfishBootOverrideRefused(t *testing.T) {
	ctx := context.Background()
	sim, c := shapedBMC(t, bmcsim.Options{BootTargets: []string{bmcsim.BootNone, bmcsim.BootHdd}})
	err := c.BootOnce(ctx, BootNetwork, BootFirmwareAny)
	require.Equal(t, failure.Unsupported, failure.ClassOf(err), "%v", err)
	assert.Contains(t, err.Error(), "enable PXE")
	assert.Zero(t, countOf(sim.RequestLog(), "PATCH "+systemURI), "nothing sent")

	sim, c = shapedBMC(t, bmcsim.Options{ForgetBootOverride: true})
	err = c.BootOnce(ctx, BootNetwork, BootFirmwareAny)
	require.Equal(t, failure.Unsupported, failure.ClassOf(err), "%v", err)
	assert.Contains(t, err.Error(), `reads back target "None"`)
	assert.Equal(t, 1, countOf(sim.RequestLog(), "PATCH "+systemURI), "sent once, not again")
}

// A patch refused for a dropped session (401) was not carried out: it is
// sent once more on a new session, and the override is in place.
func TestRedfishBootOverrideAfterDroppedSession(t *testing.T) {
	sim, c := shapedBMC(t, bmcsim.Options{})
	sim.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultUnauthorized, Method: http.MethodPatch, Count: 1})
	require.NoError(t, c.BootOnce(context.Background(), BootNetwork, BootFirmwareAny))
	assert.Equal(t, bmcsim.BootPxe, sim.BootOverride().Target)
	assert.Equal(t, 2, countOf(sim.RequestLog(), "PATCH "+systemURI), "the refused one and the one carried out")
}

// The boot flags are one bare parameter 5: valid, next boot only, PXE, and
// the EFI bit only when UEFI is asked for.
func TestIPMIBootFlags(t *testing.T) {
	tg, sim := ipmiTarget(t)
	ctx := context.Background()
	c := dial(t, tg.ep)
	require.NoError(t, c.BootOnce(ctx, BootNetwork, BootFirmwareAny))
	require.NoError(t, c.BootOnce(ctx, BootNetwork, BootFirmwareUEFI))
	require.NoError(t, c.BootOnce(ctx, BootNetwork, BootFirmwareLegacy))
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
	err := c.BootOnce(context.Background(), BootNetwork, BootFirmwareAny)
	require.Equal(t, failure.Unsupported, failure.ClassOf(err), "%v", err)
	assert.Contains(t, strings.ToLower(err.Error()), "0xcc")
	assert.Contains(t, err.Error(), "boot from the network in its firmware")
	assert.Eventually(t, func() bool { return len(bootOptionSets(sim)) == 1 }, 5*time.Second, 20*time.Millisecond)
}
