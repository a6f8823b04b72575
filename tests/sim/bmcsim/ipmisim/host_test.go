package ipmisim

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	ipmiclient "github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/chassis"
	"github.com/bougou/go-ipmi/pkg/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

func connect(t *testing.T, sim *Sim) *ipmiclient.Client {
	t.Helper()
	ctx := context.Background()
	c, err := ipmiclient.NewClient(sim.Host, sim.Port, "admin", "pw")
	require.NoError(t, err)
	c.WithCipherSuiteID(types.CipherSuiteID3)
	require.NoError(t, c.Connect(ctx))
	t.Cleanup(func() { _ = c.WithTimeout(100 * time.Millisecond).WithRetry(0).Close(ctx) })
	return c
}

// transitionsOf waits for n transitions and returns them without times.
func transitionsOf(t *testing.T, sim *Sim, n int) []bmcsim.PowerTransition {
	t.Helper()
	require.Eventually(t, func() bool { return len(sim.PowerTransitions()) >= n }, 10*time.Second, 20*time.Millisecond,
		"transitions so far: %+v", sim.PowerTransitions())
	out := sim.PowerTransitions()
	for i := range out {
		assert.False(t, out[i].At.IsZero())
		out[i].At = time.Time{}
	}
	return out
}

// Get System GUID answers the configured UUID (SMBIOS byte order), and a
// PXE boot device set over IPMI is used by the next start only, whatever
// makes it: a power on, a cycle, the power button.
func TestBootDeviceAndGUID(t *testing.T) {
	const id = "6c0ffee0-1234-4abc-8def-0123456789ab"
	sim := Require(t, Options{Username: "admin", Password: "pw", UUID: id})
	ctx := context.Background()
	c := connect(t, sim)
	var hooked []bmcsim.PowerTransition
	var mu sync.Mutex
	sim.OnPowerTransition(func(p bmcsim.PowerTransition) { mu.Lock(); hooked = append(hooked, p); mu.Unlock() })

	g, err := c.GetSystemGUID(ctx)
	require.NoError(t, err)
	u, err := types.ParseGUID(g.GUID[:], types.GUIDModeSMBIOS)
	require.NoError(t, err)
	assert.Equal(t, id, u.String())

	_, err = c.ChassisControl(ctx, chassis.ChassisControlPowerDown)
	require.NoError(t, err)
	require.NoError(t, c.SetBootDevice(ctx, types.BootDeviceSelectorForcePXE, types.BIOSBootTypeLegacy, false))
	assert.Equal(t, bmcsim.BootPxe, sim.BootOverride())
	_, err = c.ChassisControl(ctx, chassis.ChassisControlPowerUp)
	require.NoError(t, err)
	assert.Equal(t, bmcsim.BootNone, sim.BootOverride(), "used by the start")
	_, err = c.ChassisControl(ctx, chassis.ChassisControlPowerCycle)
	require.NoError(t, err)
	transitionsOf(t, sim, 4) // the cycle's power on comes a second later
	require.NoError(t, c.SetBootDevice(ctx, types.BootDeviceSelectorForcePXE, types.BIOSBootTypeEFI, true))
	_, err = c.ChassisControl(ctx, chassis.ChassisControlHardReset)
	require.NoError(t, err)
	require.NoError(t, sim.SetPower(false))
	require.NoError(t, sim.SetPower(true))

	got := transitionsOf(t, sim, 7)
	assert.Equal(t, []bmcsim.PowerTransition{
		{Change: bmcsim.PowerChangeOff, Cause: "chassis power off"},
		{Change: bmcsim.PowerChangeOn, Boot: bmcsim.BootPxe, Cause: "chassis power on"},
		{Change: bmcsim.PowerChangeOff, Cause: "chassis power off"},
		{Change: bmcsim.PowerChangeOn, Boot: bmcsim.BootNone, Cause: "chassis power on"},
		{Change: bmcsim.PowerChangeRestart, Boot: bmcsim.BootPxe, Cause: "chassis reset"},
		{Change: bmcsim.PowerChangeOff, Cause: "SetPower"},
		{Change: bmcsim.PowerChangeOn, Boot: bmcsim.BootNone, Cause: "SetPower"},
	}, got, "ipmi_sim keeps no persistence: the override is used once")
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(hooked) == 7 }, 5*time.Second, 20*time.Millisecond)
	mu.Lock()
	assert.True(t, hooked[1].NetworkBoot())
	assert.True(t, hooked[4].NetworkBoot())
	mu.Unlock()
}

// A hosted Sim starts the host's program on power on, with the network
// boot command line only when PXE was set, ends it on power off and
// restarts it on a hard reset; Stop ends it too.
func TestHostProgram(t *testing.T) {
	dir := t.TempDir()
	marks := filepath.Join(dir, "marks")
	host := func(network bool) []string {
		kind := "disk"
		if network {
			kind = "network"
		}
		// The quote checks that arguments reach the program as they are.
		return []string{"sh", "-c", `echo "$1" >>"$2"; exec sleep 3600`, "host", kind + "'s", marks}
	}
	sim := Require(t, Options{Username: "admin", Password: "pw", Dir: filepath.Join(dir, "bmc"), Host: host})
	ctx := context.Background()
	c := connect(t, sim)
	readMarks := func() []string {
		b, _ := os.ReadFile(marks)
		return strings.Fields(string(b))
	}
	powered := func(on bool) func() bool {
		return func() bool { st, err := c.GetChassisStatus(ctx); return err == nil && st.PowerIsOn == on }
	}

	require.Eventually(t, powered(false), 5*time.Second, 50*time.Millisecond, "no program runs yet: off")
	require.NoError(t, c.SetBootDevice(ctx, types.BootDeviceSelectorForcePXE, types.BIOSBootTypeLegacy, false))
	_, err := c.ChassisControl(ctx, chassis.ChassisControlPowerUp)
	require.NoError(t, err)
	require.Eventually(t, powered(true), 5*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool { return len(readMarks()) == 1 }, 5*time.Second, 20*time.Millisecond)
	assert.Equal(t, []string{"network's"}, readMarks())
	first := sim.HostPID()
	require.NotZero(t, first)

	_, err = c.ChassisControl(ctx, chassis.ChassisControlHardReset)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(readMarks()) == 2 }, 5*time.Second, 20*time.Millisecond)
	assert.Equal(t, []string{"network's", "disk's"}, readMarks(), "the override was for one start")
	assert.False(t, alive(first), "a reset ends the old program")

	_, err = c.ChassisControl(ctx, chassis.ChassisControlPowerDown)
	require.NoError(t, err)
	require.Eventually(t, powered(false), 5*time.Second, 50*time.Millisecond)
	assert.Zero(t, sim.HostPID())
	assert.Error(t, sim.SetPower(true), "a program host is powered through IPMI")

	_, err = c.ChassisControl(ctx, chassis.ChassisControlPowerUp)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return sim.HostPID() != 0 }, 5*time.Second, 20*time.Millisecond)
	last := sim.HostPID()
	require.NoError(t, sim.Stop())
	assert.Eventually(t, func() bool { return !alive(last) }, 5*time.Second, 20*time.Millisecond, "Stop ends the host with ipmi_sim")
	assert.Equal(t, []bmcsim.PowerChange{bmcsim.PowerChangeOn, bmcsim.PowerChangeRestart, bmcsim.PowerChangeOff, bmcsim.PowerChangeOn},
		changes(sim.PowerTransitions()))
}

func changes(ts []bmcsim.PowerTransition) []bmcsim.PowerChange {
	out := []bmcsim.PowerChange{}
	for _, t := range ts {
		out = append(out, t.Change)
	}
	return out
}

// A host whose firmware boots UEFI only starts from the network only when
// the boot flags carried the EFI bit: told a legacy network boot, it boots
// as it is set, as such a server does.
func TestUEFIOnlyHost(t *testing.T) {
	dir := t.TempDir()
	marks := filepath.Join(dir, "marks")
	host := func(network bool) []string {
		kind := "disk"
		if network {
			kind = "network"
		}
		return []string{"sh", "-c", `echo "$1" >>"$2"; exec sleep 3600`, "host", kind, marks}
	}
	sim := Require(t, Options{Username: "admin", Password: "pw", Dir: filepath.Join(dir, "bmc"), Host: host, UEFIOnly: true})
	ctx := context.Background()
	c := connect(t, sim)
	readMarks := func() []string {
		b, _ := os.ReadFile(marks)
		return strings.Fields(string(b))
	}
	start := func(efi types.BIOSBootType, n int) {
		t.Helper()
		require.NoError(t, c.SetBootDevice(ctx, types.BootDeviceSelectorForcePXE, efi, false))
		_, err := c.ChassisControl(ctx, chassis.ChassisControlPowerUp)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return len(readMarks()) == n }, 10*time.Second, 20*time.Millisecond)
		_, err = c.ChassisControl(ctx, chassis.ChassisControlPowerDown)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return sim.HostPID() == 0 }, 10*time.Second, 20*time.Millisecond)
	}
	start(types.BIOSBootTypeLegacy, 1)
	start(types.BIOSBootTypeEFI, 2)
	start(types.BIOSBootTypeLegacy, 3)
	assert.Equal(t, []string{"disk", "network", "disk"}, readMarks())
	// The BMC took the override each time; the firmware chose what to do with it.
	for _, p := range sim.PowerTransitions() {
		if p.Change == bmcsim.PowerChangeOn {
			assert.Equal(t, bmcsim.BootPxe, p.Boot)
		}
	}
}
