package hardware

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
)

func TestWhenAPowerStateNeedsACall(t *testing.T) {
	for _, tc := range []struct {
		desired  v1.PowerState
		observed string
		want     bool
	}{
		{v1.PowerOn, "", false}, // a server is made on
		{v1.PowerOn, "on", false},
		{v1.PowerOn, "unknown", false},
		{v1.PowerOn, "off", true},
		{v1.PowerOn, "powering-off", true},
		{v1.PowerOff, "", true},
		{v1.PowerOff, "on", true},
		{v1.PowerOff, "powering-off", true}, // the call finds it on its way and sends nothing
		{v1.PowerOff, "off", false},
	} {
		assert.Equal(t, tc.want, needsPower(tc.desired, tc.observed), "%s while %q", tc.desired, tc.observed)
	}
}

func TestWhereAnActionTakesTheServer(t *testing.T) {
	assert.True(t, reached(v1.PowerActionOff, machine.PowerOff, false))
	assert.False(t, reached(v1.PowerActionOff, machine.PowerPoweringOff, true))
	assert.True(t, reached(v1.PowerActionOn, machine.PowerOn, false))
	assert.False(t, reached(v1.PowerActionReboot, machine.PowerOn, false), "a reboot not yet taken is not done because the server is on")
	assert.True(t, reached(v1.PowerActionReboot, machine.PowerOn, true))
	assert.True(t, underway(v1.PowerActionOff, machine.PowerPoweringOff))
	assert.True(t, underway(v1.PowerActionOn, machine.PowerPoweringOn))
	assert.False(t, underway(v1.PowerActionOn, machine.PowerPoweringOff))
	assert.False(t, underway(v1.PowerActionReboot, machine.PowerPoweringOn))
}

func TestForwardedEventsAreNamedByTheirID(t *testing.T) {
	a := eventName("pool-abcdefgh", "0b4c0e3a-1b7e-4c54-9f0a-8b1c6a7a3d11")
	assert.Equal(t, a, eventName("pool-abcdefgh", "0b4c0e3a-1b7e-4c54-9f0a-8b1c6a7a3d11"), "the same event, the same name, after any restart")
	assert.NotEqual(t, a, eventName("pool-abcdefgh", "another"))
	assert.True(t, strings.HasPrefix(a, "pool-abcdefgh.hw-"))

	long := strings.Repeat("é", 800)
	msg := message(machine.Event{Type: "instance.note", Message: long, Time: time.Now()})
	assert.LessOrEqual(t, len(msg), maxMessage)
	assert.True(t, strings.HasPrefix(msg, "instance.note: é"))
	assert.NotContains(t, msg, "\ufffd", "cut on a rune boundary")
}

func TestBackoffDoublesToItsCap(t *testing.T) {
	r := &run{s: &Steps{settings: StepSettings{PollInterval: 15 * time.Second}}}
	assert.Equal(t, 30*time.Second, r.backoff(1))
	assert.Equal(t, 60*time.Second, r.backoff(2))
	assert.Equal(t, maxRetryBackoff, r.backoff(20))
	assert.Equal(t, time.Duration(-1), off(0))
	assert.Equal(t, time.Minute, off(time.Minute))
}
