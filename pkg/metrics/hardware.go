package metrics

import "github.com/prometheus/client_golang/prometheus"

// The hardware chain's metrics.
var (
	// PowerCalls counts the power calls sent to a server's management
	// controller, by action and by what came of the call.
	PowerCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "equinix_addon_power_calls_total",
		Help: "Power calls sent, by action (on, off, reboot) and result (accepted, refused, throttled, unconfirmed: the answer was lost).",
	}, []string{"action", "result"})

	// PowerActions counts the power requests that ended, by action and result.
	PowerActions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "equinix_addon_power_actions_total",
		Help: "Power requests (spec.powerState, spec.rebootRequestedAt) that ended, by action and result (Succeeded, Failed, Cancelled).",
	}, []string{"action", "result"})

	// EventsForwarded counts machine events forwarded as Kubernetes Events,
	// by the node they are about ("" while a server has none) and their
	// severity; a node's series go with its Instance or inventory.
	EventsForwarded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "equinix_addon_hardware_events_forwarded_total",
		Help: "Events of the servers' management controllers (the Equinix Metal event log, a BMC's health changes and event log) forwarded as Kubernetes Events, by node and Event type (Normal, Warning).",
	}, []string{"node", "type"})
)

func init() {
	registry.MustRegister(PowerCalls, PowerActions, EventsForwarded)
}

// SeederInstalled is 1 while the seeder mode finds Harvester's own Seeder
// installed, and leaves the Inventories to it.
var SeederInstalled = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "equinix_addon_seeder_installed",
	Help: "1 while Harvester Seeder is found installed (its Inventory CRD, or Tinkerbell's BMC machines): the addon then reconciles no Inventory.",
})

func init() {
	registry.MustRegister(SeederInstalled)
}
