package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The addon's own metrics. The Metal API ones live with the client (pkg/metal)
// and lasso adds its handler and workqueue metrics; all share one registry.
var (
	// Instances counts Instances by pool and phase (the STATUS column).
	Instances = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "equinix_addon_instances",
		Help: "Instances by pool and phase.",
	}, []string{"pool", "phase"})

	// PoolPhase is 1 for each pool's current phase and 0 for the others, the
	// way kube-state-metrics exports a Pod's phase, so that an alert or a
	// panel selects a phase without knowing the others.
	PoolPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "equinix_addon_pool_phase",
		Help: "1 for the pool's current phase (the STATUS column), 0 for the others.",
	}, []string{"pool", "phase"})

	// OldestDeletion is when the longest-running deletion of a pool's
	// Instances began. A pool that churns always has some server deleting; only
	// one that has been deleting for long is stuck.
	OldestDeletion = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "equinix_addon_oldest_deletion_timestamp_seconds",
		Help: "Unix time at which the oldest deletion still in progress among the pool's Instances began; absent when none is.",
	}, []string{"pool"})

	// ProvisionDuration is from device creation to the device being active.
	ProvisionDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "equinix_addon_provision_duration_seconds",
		Help:    "Time from device creation until the device is active.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14), // 1s .. ~2h
	})

	// JoinDuration is from device creation to a Ready node.
	JoinDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "equinix_addon_join_duration_seconds",
		Help:    "Time from device creation until the server's node is Ready.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14),
	})

	// DeleteDuration is from the Instance's deletion to the release of its device
	// and node.
	DeleteDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "equinix_addon_delete_duration_seconds",
		Help:    "Time from an Instance's deletion until its device and node are gone.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14),
	})

	// Remediations counts unhealthy servers replaced, by pool.
	Remediations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "equinix_addon_remediations_total",
		Help: "Unhealthy servers replaced, by pool.",
	}, []string{"pool"})

	// ProvisionFailures counts servers that failed before joining, by pool.
	ProvisionFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "equinix_addon_provision_failures_total",
		Help: "Servers that failed before joining (device failed or startup timeout), by pool.",
	}, []string{"pool"})

	// OrphansFound counts devices tagged with this cluster that no Instance claims.
	OrphansFound = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "equinix_addon_orphan_devices_found_total",
		Help: "Devices tagged with this cluster that no Instance claims, each time a sweep sees one.",
	})

	// OrphansDeleted counts orphaned devices deleted by the sweep.
	OrphansDeleted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "equinix_addon_orphan_devices_deleted_total",
		Help: "Orphaned devices the sweep deleted after their grace period.",
	})
)

func init() {
	registry.MustRegister(Instances, PoolPhase, OldestDeletion, ProvisionDuration, JoinDuration, DeleteDuration,
		Remediations, ProvisionFailures, OrphansFound, OrphansDeleted)
}
