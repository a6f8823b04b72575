package instancepool

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

var poolPhases = []string{v1.PoolPhasePending, v1.PoolPhaseProvisioning, v1.PoolPhaseReady, v1.PoolPhaseScaling,
	v1.PoolPhaseDegraded, v1.PoolPhaseFailed, v1.PoolPhaseDeleting}

// recordPool sets a pool's gauges: its phase, its Instances by phase and the
// start of its oldest deletion in progress.
func recordPool(pool, phase string, insts []*v1.Instance) {
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
func recordPhases(pool string, insts []*v1.Instance) {
	counts := map[string]int{}
	for _, p := range []string{v1.PhasePending, v1.PhaseProvisioning, v1.PhaseNetworking, v1.PhaseInstalling,
		v1.PhaseJoining, v1.PhaseManaged, v1.PhaseUnhealthy, v1.PhaseOff, v1.PhaseFailed, v1.PhaseDeleting} {
		counts[p] = 0
	}
	for _, i := range insts {
		phase := i.Status.Status
		if i.DeletionTimestamp != nil {
			phase = v1.PhaseDeleting
		}
		if phase == "" {
			phase = v1.PhasePending
		}
		counts[phase]++
	}
	for phase, n := range counts {
		metrics.Instances.WithLabelValues(pool, phase).Set(float64(n))
	}
}
