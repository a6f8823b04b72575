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

	// TaintedNotFencedNodes is how many nodes with an Inventory carry the
	// out-of-service taint while their server is not confirmed off.
	TaintedNotFencedNodes = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "equinix_addon_nodes_tainted_unfenced",
		Help: "Nodes tainted node.kubernetes.io/out-of-service (by Harvester's node-down handling or a person) whose server their BMC does not show off: their VMs may run twice.",
	})
)

func init() {
	registry.MustRegister(FencedNodes, FenceActions, TaintedNotFencedNodes)
}
