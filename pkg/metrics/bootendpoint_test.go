package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A step's time as the status stores it (an API time, whole seconds) is
// replaced by the time this process kept, while the status still holds
// that second; a step stored again since, or unknown here, keeps the
// status's time.
func TestBootStepTimeIsTheKeptOneWhileTheStatusHoldsIt(t *testing.T) {
	kept := time.Date(2026, 12, 6, 12, 0, 7, 830_000_000, time.UTC)
	stored := kept.Truncate(time.Second)
	MarkBootStep("pool-a-xyz", BootStepPowerRequested, kept)
	defer ForgetBootSteps("pool-a-xyz")

	assert.Equal(t, kept, BootStepTime("pool-a-xyz", BootStepPowerRequested, stored))
	assert.Equal(t, stored.Add(time.Second), BootStepTime("pool-a-xyz", BootStepPowerRequested, stored.Add(time.Second)),
		"the status holds another time: stored again since")
	assert.Equal(t, stored, BootStepTime("pool-a-xyz", BootStepScriptServed, stored), "a step not kept here")
	assert.True(t, BootStepTime("pool-a-xyz", BootStepPowerRequested, time.Time{}).IsZero(), "a step the status does not hold")
	ForgetBootSteps("pool-a-xyz")
	assert.Equal(t, stored, BootStepTime("pool-a-xyz", BootStepPowerRequested, stored), "forgotten")
}

// A phase of tens of milliseconds, as a server that boots in a second or
// two has (a BMC's commands, a file served), falls in a bucket of its own
// size, not in the first one of a tenth of a second.
func TestBootPhaseBucketsResolveTensOfMilliseconds(t *testing.T) {
	const phase = "test_phase"
	start := time.Date(2026, 12, 6, 12, 0, 7, 830_000_000, time.UTC)
	ObserveBootPhase(phase, start, start.Add(30*time.Millisecond))
	defer OwnedBootPhase.DeleteLabelValues(phase)

	m := &dto.Metric{}
	require.NoError(t, OwnedBootPhase.WithLabelValues(phase).(prometheus.Histogram).Write(m))
	buckets := m.GetHistogram().GetBucket()
	require.NotEmpty(t, buckets)
	var first float64
	for _, b := range buckets {
		if b.GetCumulativeCount() > 0 {
			first = b.GetUpperBound()
			break
		}
	}
	assert.LessOrEqual(t, first, 0.05, "30 ms lands in a bucket of at most 50 ms")
	assert.LessOrEqual(t, len(buckets), 18, "few buckets per phase")
}
