package bmc

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIPMIUnknownUser(t *testing.T) {
	tg, _ := ipmiTarget(t)
	ep := tg.ep
	ep.Username = "nobody"
	_, err := Dial(context.Background(), ep)
	assert.Equal(t, Unauthorized, ClassOf(err), "%v", err)
}

// After a timeout the session may be broken; the next call opens a new
// one instead of failing forever.
func TestIPMIRecoversAfterTimeout(t *testing.T) {
	tg, _ := ipmiTarget(t)
	ctx := context.Background()
	ep := tg.slow(t, 0)
	ep.Timeout = time.Second
	c := dial(t, ep)
	tg.slow(t, 2*time.Second)
	_, err := c.PowerState(ctx)
	require.Equal(t, Transient, ClassOf(err), "%v", err)
	tg.slow(t, 0)
	assert.Eventually(t, func() bool {
		st, err := c.PowerState(ctx)
		return err == nil && st == PowerOn
	}, 10*time.Second, 100*time.Millisecond)
}

func TestIPMIHealthOfEachSensorKind(t *testing.T) {
	tg, sim := ipmiTarget(t)
	ctx := context.Background()
	c := dial(t, tg.ep)
	require.NoError(t, sim.SetSensorValue(1, 0x58))  // CPU1 Temp 88: above non-critical 85
	require.NoError(t, sim.SetSensorValue(2, 0x08))  // FAN1 800 RPM: below critical 1000
	require.NoError(t, sim.SetSensorBit(4, 2, true)) // drive: predictive failure
	require.NoError(t, sim.SetSensorBit(5, 1, true)) // DIMM: uncorrectable ECC
	require.NoError(t, sim.SetSensorBit(6, 0, true)) // CPU: IERR
	h, err := c.Health(ctx)
	require.NoError(t, err)
	want := map[Subsystem]SubsystemHealth{
		SubsystemThermal:       {SubsystemThermal, StateWarning, "CPU1 Temp: Warning"},
		SubsystemFans:          {SubsystemFans, StateCritical, "FAN1: Critical"},
		SubsystemPowerSupplies: {SubsystemPowerSupplies, StateOK, "1 of 1 OK"},
		SubsystemStorage:       {SubsystemStorage, StateWarning, "Drive 0: Warning"},
		SubsystemMemory:        {SubsystemMemory, StateCritical, "DIMM A1: Critical"},
		SubsystemProcessors:    {SubsystemProcessors, StateCritical, "CPU1 Status: Critical"},
	}
	for _, s := range Subsystems {
		assert.Equal(t, want[s], h.Get(s))
	}
	assert.Equal(t, StateCritical, h.Overall)

	// The sensor events the BMC logged show up in the SEL too.
	entries, _, err := c.LogEntries(ctx, "")
	require.NoError(t, err)
	var critical int
	for _, e := range entries {
		if e.Severity == StateCritical {
			critical++
		}
	}
	assert.Positive(t, critical, "%+v", entries)
}
