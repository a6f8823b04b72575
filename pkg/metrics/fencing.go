package metrics

import "github.com/prometheus/client_golang/prometheus"

// The fencing chain's metrics (--fencing).
var (
	// FencedNodes is how many nodes are fenced now, or being fenced (a
	// power-off sent and not yet seen): what --fencing-max-fenced bounds.
	FencedNodes = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "equinix_addon_fenced_nodes",
		Help: "Nodes fenced now, or being fenced: their server switched off by the addon and their Node tainted out-of-service (bounded by --fencing-max-fenced).",
	})

	// FenceActions counts fencing's steps, by action and result.
	FenceActions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "equinix_addon_fence_actions_total",
		Help: "Fencing steps, by action (power-off, taint, untaint, power-on) and result (done, already: nothing was sent, refused, unconfirmed: the answer was lost, failed).",
	}, []string{"action", "result"})
)

func init() {
	registry.MustRegister(FencedNodes, FenceActions)
}
