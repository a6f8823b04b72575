package instancepool

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

var poolPhases = []string{equinixv1.PoolPhasePending, equinixv1.PoolPhaseProvisioning, equinixv1.PoolPhaseReady, equinixv1.PoolPhaseScaling,
	equinixv1.PoolPhaseDegraded, equinixv1.PoolPhaseFailed, equinixv1.PoolPhaseDeleting}

// recordPool sets a pool's gauges: its phase, its Instances by phase and the
// start of its oldest deletion in progress.
func recordPool(pool, phase string, insts []*equinixv1.Instance) {
	for _, p := range poolPhases {
		v := 0.0
		if p == phase {
			v = 1
		}
		metrics.PoolPhase.WithLabelValues(pool, p).Set(v)
	}
	recordPhases(pool, insts)
	var oldest time.Time
	for _, i := range insts {
		if d := i.DeletionTimestamp; d != nil && (oldest.IsZero() || d.Time.Before(oldest)) {
			oldest = d.Time
		}
	}
	if oldest.IsZero() {
		metrics.OldestDeletion.DeleteLabelValues(pool)
		return
	}
	metrics.OldestDeletion.WithLabelValues(pool).Set(float64(oldest.Unix()))
}

// forgetPool drops a deleted pool's series.
func forgetPool(pool string) {
	for _, m := range []*prometheus.GaugeVec{metrics.Instances, metrics.PoolPhase, metrics.OldestDeletion} {
		m.DeletePartialMatch(prometheus.Labels{"pool": pool})
	}
}

// recordPhases sets the instances-by-phase gauge of a pool (phases with no
// Instance read zero rather than disappearing, which keeps graphs continuous).
func recordPhases(pool string, insts []*equinixv1.Instance) {
	counts := map[string]int{}
	for _, p := range []string{equinixv1.PhasePending, equinixv1.PhaseProvisioning, equinixv1.PhaseNetworking, equinixv1.PhaseInstalling,
		equinixv1.PhaseJoining, equinixv1.PhaseManaged, equinixv1.PhaseUnhealthy, equinixv1.PhaseOff, equinixv1.PhaseFailed, equinixv1.PhaseDeleting} {
		counts[p] = 0
	}
	for _, i := range insts {
		phase := i.Status.Status
		if i.DeletionTimestamp != nil {
			phase = equinixv1.PhaseDeleting
		}
		if phase == "" {
			phase = equinixv1.PhasePending
		}
		counts[phase]++
	}
	for phase, n := range counts {
		metrics.Instances.WithLabelValues(pool, phase).Set(float64(n))
	}
}
