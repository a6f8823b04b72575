package ipmisim

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	ipmiclient "github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/chassis"
	"github.com/bougou/go-ipmi/pkg/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSimulator(t *testing.T) {
	sim := Require(t, Options{Username: "admin", Password: "pw", Manufacturer: "Acme", Model: "Rack 1", SerialNumber: "SN42"})
	ctx := context.Background()
	c, err := ipmiclient.NewClient(sim.Host, sim.Port, "admin", "pw")
	require.NoError(t, err)
	// Name the cipher suite: asking ipmi_sim for its list times out.
	c.WithCipherSuiteID(types.CipherSuiteID3)
	require.NoError(t, c.Connect(ctx))
	// ipmi_sim ends a session without answering Close Session: do not wait.
	defer func() { _ = c.WithTimeout(100 * time.Millisecond).WithRetry(0).Close(ctx) }()

	fru, err := c.GetFRU(ctx, 0, "")
	require.NoError(t, err)
	assert.Equal(t, "SN42", strings.TrimSpace(string(fru.ProductInfoArea.SerialNumber)))

	sensors, err := c.GetSensors(ctx)
	require.NoError(t, err)
	assert.Len(t, sensors, 6)

	first, err := sim.AddSEL(0x01, SensorCPUTemp, 0x01, 0x57, 0, 0)
	require.NoError(t, err)
	second, err := sim.AddSEL(0x01, SensorCPUTemp, 0x81, 0x57, 0, 0)
	require.NoError(t, err)
	assert.Greater(t, second, first)
	entries, err := c.GetSELEntries(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, second, entries[len(entries)-1].RecordID)

	assert.Error(t, sim.SetSensorValue(99, 1), "sensor 99 does not exist")

	_, err = c.ChassisControl(ctx, chassis.ChassisControlPowerDown)
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return len(sim.ChassisControls()) == 1 }, 5*time.Second, 20*time.Millisecond)
	assert.Equal(t, []byte{0}, sim.ChassisControls())
	on, err := sim.PowerOn()
	require.NoError(t, err)
	assert.False(t, on)

	// A power cycle is one command; the BMC powers on again by itself.
	_, err = c.ChassisControl(ctx, chassis.ChassisControlPowerCycle)
	require.NoError(t, err)
	assert.Eventually(t, func() bool { on, _ := sim.PowerOn(); return on }, 5*time.Second, 50*time.Millisecond)
	assert.Equal(t, []byte{0, 2}, sim.ChassisControls())

	msgs := sim.Messages()
	require.NotEmpty(t, msgs)
	var cycle Message
	for _, m := range msgs {
		if m.NetFn == 0 && m.Cmd == 2 {
			cycle = m
		}
	}
	assert.Equal(t, "02", cycle.Data, "the last chassis control, with its data")

	require.NoError(t, sim.SetPower(false))
	st, err := c.GetChassisStatus(ctx)
	require.NoError(t, err)
	assert.False(t, st.PowerIsOn)
}

func TestStopEndsTheProcess(t *testing.T) {
	if os.Getenv("CI") != "true" {
		if _, err := Start(Options{}); errors.Is(err, ErrNotInstalled) {
			t.Skip(err)
		}
	}
	sim, err := Start(Options{Username: "admin", Password: "pw", Dir: t.TempDir()})
	require.NoError(t, err)
	pid := sim.cmd.Process.Pid
	require.NoError(t, sim.Stop())
	select {
	case <-sim.exited:
	default:
		t.Fatalf("ipmi_sim (pid %d) still runs after Stop", pid)
	}
}

func TestStartWithoutIPMISim(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Start(Options{Username: "admin", Dir: t.TempDir()})
	assert.ErrorIs(t, err, ErrNotInstalled)
}

// ipmi_sim on a LAN port another socket holds fails with the words Start
// looks for to start again on other ports; a port the caller chose is
// kept, so the tries end in that error.
func TestStartOnATakenPort(t *testing.T) {
	taken, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = taken.Close() })
	sim, err := Start(Options{Username: "admin", Password: "pw", Dir: t.TempDir(), Port: taken.LocalAddr().(*net.UDPAddr).Port})
	if errors.Is(err, ErrNotInstalled) {
		Require(t, Options{})
	}
	if err == nil {
		_ = sim.Stop()
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Address already in use")
}

// A LAN port Start found free but another socket took before ipmi_sim
// bound it costs one more start, on another port.
func TestStartAgainWhenAPickedPortWasTaken(t *testing.T) {
	bin, err := exec.LookPath("ipmi_sim")
	if err != nil {
		Require(t, Options{}) // skips, or fails in CI
	}
	taken, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = taken.Close() })
	takenPort := taken.LocalAddr().(*net.UDPAddr).Port
	picks := 0
	pick := func(network string) (int, error) {
		if network == "udp" {
			picks++
			if picks == 1 {
				return takenPort, nil
			}
		}
		return freePort(network)
	}
	sim, err := startTrying(bin, Options{Username: "admin", Password: "pw", Dir: t.TempDir()}, pick)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Stop() })
	assert.Equal(t, 2, picks, "one start more")
	assert.NotEqual(t, takenPort, sim.Port)
}
