package inventory

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

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

// The poll interval is spec.events.pollingInterval read within 1s and 24h:
// every value the UI's validator (^\d+[hms]$) lets through is read as the
// nearest bound, saying why; anything the schema let through before the
// pattern reads as Seeder's hour.
func TestClampInterval(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Duration
		clamped bool
	}{
		{"1h", time.Hour, false}, {"90s", 90 * time.Second, false}, {"1h30m", 90 * time.Minute, false}, {"", time.Hour, false},
		{"24h", 24 * time.Hour, false}, {"1s", time.Second, false},
		{"0s", time.Second, true}, {"500ms", time.Second, true}, {"48h", 24 * time.Hour, true},
		{"99999999999999999999h", 24 * time.Hour, true}, {"1d", time.Hour, true},
	} {
		got, why := clampInterval(tc.in)
		assert.Equal(t, tc.want, got, tc.in)
		assert.Equal(t, tc.clamped, why != "", "%s: %q", tc.in, why)
	}
}

// A clamped interval is told in a Warning Event once per generation, not
// at every pass.
func TestClampedIntervalToldOncePerGeneration(t *testing.T) {
	events := record.NewFakeRecorder(10)
	h := &Handler{recorder: events, intervals: newOnceEach()}
	inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: seederv1alpha1.InventoryNamespace, Name: "n", Generation: 1}}
	inv.Spec.Events.PollingInterval = "0s"
	for range 3 {
		assert.Equal(t, time.Second, h.pollInterval(h.newTarget(inv, time.Now(), 0)))
	}
	require.Len(t, events.Events, 1)
	assert.Contains(t, <-events.Events, "Warning PollingIntervalClamped spec.events.pollingInterval \"0s\" is shorter than the shortest interval, 1s")
	inv.Generation = 2
	h.pollInterval(h.newTarget(inv, time.Now(), 0))
	assert.Len(t, events.Events, 1, "a new generation is told again")
}

func TestMachinePowerState(t *testing.T) {
	assert.Equal(t, "on", machinePowerState("on"))
	assert.Equal(t, "off", machinePowerState("off"))
	assert.Equal(t, "unknown", machinePowerState("powering-off"))
	assert.Equal(t, "unknown", machinePowerState("unknown"))
}
