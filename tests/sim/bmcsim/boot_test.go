package bmcsim

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func bootOf(t *testing.T, f *fixture) map[string]any {
	t.Helper()
	_, sys := f.do(t, http.MethodGet, "/redfish/v1/Systems/1", nil, true)
	boot, ok := sys["Boot"].(map[string]any)
	require.True(t, ok, "the system reports Boot")
	return boot
}

func patchBoot(t *testing.T, f *fixture, boot map[string]any) int {
	t.Helper()
	resp, _ := f.do(t, http.MethodPatch, "/redfish/v1/Systems/1", map[string]any{"Boot": boot}, true)
	return resp.StatusCode
}

// A one-time network boot is kept, reported, used by the next start only,
// and then reads Disabled again; a hook sees every transition with the
// boot target it started from.
func TestOneTimeNetworkBoot(t *testing.T) {
	f := newFixture(t, Options{})
	var seen []PowerTransition
	f.bmc.OnPowerTransition(func(p PowerTransition) { seen = append(seen, p) })
	require.NoError(t, f.bmc.SetPowerState("Off"))

	require.Equal(t, http.StatusNoContent, patchBoot(t, f, map[string]any{
		"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once", "BootSourceOverrideMode": "Legacy"}))
	boot := bootOf(t, f)
	assert.Equal(t, "Pxe", boot["BootSourceOverrideTarget"])
	assert.Equal(t, "Once", boot["BootSourceOverrideEnabled"])
	assert.Equal(t, "Legacy", boot["BootSourceOverrideMode"])
	assert.Contains(t, boot["BootSourceOverrideTarget@Redfish.AllowableValues"], "Pxe")

	resp, _ := f.do(t, http.MethodPost, "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset", map[string]any{"ResetType": "On"}, true)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.Equal(t, BootOverride{Target: BootNone, Enabled: BootDisabled, Mode: "Legacy"}, f.bmc.BootOverride(), "used up by the start")

	for _, reset := range []string{"ForceRestart", "ForceOff", "PowerCycle", "On"} {
		resp, _ := f.do(t, http.MethodPost, "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset", map[string]any{"ResetType": reset}, true)
		require.Equal(t, http.StatusNoContent, resp.StatusCode, reset)
	}
	want := []PowerTransition{
		{Change: PowerChangeOff, Cause: "SetPowerState"},
		{Change: PowerChangeOn, Boot: BootPxe, Cause: "On"},
		{Change: PowerChangeRestart, Boot: BootNone, Cause: "ForceRestart"},
		{Change: PowerChangeOff, Cause: "ForceOff"},
		{Change: PowerChangeOn, Boot: BootNone, Cause: "PowerCycle"},
	}
	got := f.bmc.PowerTransitions()
	require.Len(t, got, len(want), "On while on changes nothing")
	for i := range got {
		assert.False(t, got[i].At.IsZero())
		got[i].At = want[i].At
	}
	assert.Equal(t, want, got)
	assert.Equal(t, got, seenWithoutTimes(seen))
	assert.True(t, got[1].NetworkBoot())
	assert.False(t, got[2].NetworkBoot())
}

func seenWithoutTimes(ts []PowerTransition) []PowerTransition {
	out := make([]PowerTransition, len(ts))
	for i, t := range ts {
		t.At = out[i].At
		out[i] = t
	}
	return out
}

// A continuous override stays for every start; a restart while on uses it.
func TestContinuousOverrideStays(t *testing.T) {
	f := newFixture(t, Options{})
	require.Equal(t, http.StatusNoContent, patchBoot(t, f, map[string]any{"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Continuous"}))
	for range 2 {
		resp, _ := f.do(t, http.MethodPost, "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset", map[string]any{"ResetType": "ForceRestart"}, true)
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
	}
	for _, p := range f.bmc.PowerTransitions() {
		assert.True(t, p.NetworkBoot(), "%+v", p)
	}
	assert.Equal(t, "Continuous", bootOf(t, f)["BootSourceOverrideEnabled"])
}

// What a BMC refuses, it refuses whole, with 400, and keeps what it had.
func TestBootOverrideRefusals(t *testing.T) {
	f := newFixture(t, Options{BootTargets: []string{BootNone, BootHdd}, NoBootMode: true})
	for name, body := range map[string]map[string]any{
		"a target the system does not allow": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"},
		"a mode the system does not report":  {"BootSourceOverrideTarget": "Hdd", "BootSourceOverrideMode": "UEFI"},
		"an unknown enabled value":           {"BootSourceOverrideEnabled": "Twice"},
		"a read-only property":               {"BootOrder": "x"},
	} {
		assert.Equal(t, http.StatusBadRequest, patchBoot(t, f, body), name)
	}
	resp, _ := f.do(t, http.MethodPatch, "/redfish/v1/Systems/1", map[string]any{"AssetTag": "x"}, true)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	resp, _ = f.do(t, http.MethodPatch, "/redfish/v1/Chassis/1", map[string]any{"Boot": map[string]any{}}, true)
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	boot := bootOf(t, f)
	assert.Equal(t, "None", boot["BootSourceOverrideTarget"])
	assert.NotContains(t, boot, "BootSourceOverrideMode")
	assert.Equal(t, []any{"None", "Hdd"}, boot["BootSourceOverrideTarget@Redfish.AllowableValues"])
}

// Vendors' ways with the boot mode: one refuses a PATCH naming it, even
// unchanged, and keeps nothing of it; another sets it to Legacy when a
// PATCH leaves it out, and keeps it when it is sent.
func TestBootModeVendorShapes(t *testing.T) {
	once := map[string]any{"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}
	withMode := func(mode string) map[string]any {
		return map[string]any{"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once", "BootSourceOverrideMode": mode}
	}

	readOnly := newFixture(t, Options{BootModeReadOnly: true})
	assert.Equal(t, http.StatusBadRequest, patchBoot(t, readOnly, withMode("UEFI")), "the mode it has")
	assert.Equal(t, http.StatusBadRequest, patchBoot(t, readOnly, withMode("Legacy")), "another mode")
	assert.Equal(t, BootOverride{Target: BootNone, Enabled: BootDisabled, Mode: "UEFI"}, readOnly.bmc.BootOverride(), "nothing applied")
	assert.Equal(t, http.StatusNoContent, patchBoot(t, readOnly, once))
	assert.Equal(t, BootOverride{Target: BootPxe, Enabled: BootOnce, Mode: "UEFI"}, readOnly.bmc.BootOverride())

	resets := newFixture(t, Options{BootModeResetWhenOmitted: true})
	assert.Equal(t, http.StatusNoContent, patchBoot(t, resets, withMode("UEFI")))
	assert.Equal(t, "UEFI", resets.bmc.BootOverride().Mode, "sent, kept")
	assert.Equal(t, http.StatusNoContent, patchBoot(t, resets, once))
	assert.Equal(t, "Legacy", resets.bmc.BootOverride().Mode, "left out, reset")
}
