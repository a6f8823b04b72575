package inventory

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/bmcdriver"
)

// A BMC that fails is tried again after the poll interval, at most a
// minute; one that refuses the credentials waits at least a minute whatever
// the poll interval, then as long as it has refused them, up to 30 minutes
// (or the poll interval, if longer).
func TestBMCRetryAfter(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	refused := bmcdriver.Observation{Problem: &failure.Error{Seam: bmc.Seam, Class: failure.Unauthorized}}
	down := bmcdriver.Observation{Problem: &failure.Error{Seam: bmc.Seam, Class: failure.Unreachable}}
	since := func(d time.Duration) *target {
		inv := &seederv1alpha1.Inventory{}
		inv.Status.Conditions = []metav1.Condition{{Type: equinixv1.BMCAuthenticated, Status: metav1.ConditionFalse,
			LastTransitionTime: metav1.NewTime(now.Add(-d))}}
		return targetOf(inv)
	}
	r := &run{now: now}
	for _, c := range []struct {
		name     string
		t        *target
		o        bmcdriver.Observation
		interval time.Duration
		want     time.Duration
	}{
		{"unreachable, long interval", since(0), down, 15 * time.Minute, time.Minute},
		{"unreachable, short interval", since(0), down, 5 * time.Second, 5 * time.Second},
		{"refused just now", since(0), refused, 15 * time.Minute, time.Minute},
		{"refused just now, 5s polls", since(0), refused, 5 * time.Second, time.Minute},
		{"refused for 20s, 5s polls", since(20 * time.Second), refused, 5 * time.Second, time.Minute},
		{"refused for 3 minutes, 5s polls", since(3 * time.Minute), refused, 5 * time.Second, 3 * time.Minute},
		{"refused for 10 minutes", since(10 * time.Minute), refused, 15 * time.Minute, 10 * time.Minute},
		{"refused for hours", since(5 * time.Hour), refused, 15 * time.Minute, 30 * time.Minute},
		{"refused for hours, daily polls", since(5 * time.Hour), refused, 24 * time.Hour, 5 * time.Hour},
	} {
		assert.Equal(t, c.want, r.bmcRetryAfter(c.t, c.o, c.interval), c.name)
	}
}

// The poll interval is spec.events.pollingInterval, within 1s and 24h;
// anything the schema let through before its rule reads as Seeder's hour.
func TestPollInterval(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"1h": time.Hour, "90s": 90 * time.Second, "1h30m": 90 * time.Minute, "": time.Hour, "1d": time.Hour,
		"500ms": time.Hour, "48h": 24 * time.Hour,
	} {
		inv := &seederv1alpha1.Inventory{}
		inv.Spec.Events.PollingInterval = in
		assert.Equal(t, want, pollInterval(inv), in)
	}
}

func TestMachinePowerState(t *testing.T) {
	assert.Equal(t, "on", machinePowerState("on"))
	assert.Equal(t, "off", machinePowerState("off"))
	assert.Equal(t, "unknown", machinePowerState("powering-off"))
	assert.Equal(t, "unknown", machinePowerState("unknown"))
}
