package metrics

import "github.com/prometheus/client_golang/prometheus"

// The ElasticIP chain's metrics, labelled with the address (an ElasticIP
// per address, a handful per cluster).
var (
	// ElasticIPMoves counts the assignments the addon made to follow
	// kube-vip: a move from another device, or a first assignment.
	ElasticIPMoves = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "equinix_addon_elasticip_moves_total",
		Help: "Assignments of an Elastic IP the addon made to follow kube-vip's vipHost (moves from another device and first assignments).",
	}, []string{"address"})

	// ElasticIPMoveDuration is from the addon first seeing kube-vip name a
	// node whose device lacks the address to the assignment being in place.
	ElasticIPMoveDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "equinix_addon_elasticip_move_duration_seconds",
		Help:    "Time from the addon seeing kube-vip's vipHost name another node until the Elastic IP is assigned to that node's device.",
		Buckets: prometheus.ExponentialBuckets(0.25, 2, 12), // 0.25s .. ~8.5m
	})

	// ElasticIPOnVIPHost is 1 while an Elastic IP is, as last read from
	// Equinix Metal, assigned to the device of the node kube-vip names, 0
	// while it is not (elsewhere, nowhere, or that node's device unknown),
	// and absent while there is nothing to compare (no vipHost, an address
	// outside the project, credentials refused).
	ElasticIPOnVIPHost = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "equinix_addon_elasticip_on_viphost",
		Help: "1 while the Elastic IP is assigned to the device of the node kube-vip names in kube-vip.io/vipHost, 0 while not; absent when there is no such node or the address is not the project's.",
	}, []string{"elasticip", "address"})
)

func init() {
	registry.MustRegister(ElasticIPMoves, ElasticIPMoveDuration, ElasticIPOnVIPHost)
}
