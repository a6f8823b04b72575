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

// SeederRunning is 1 while the seeder mode finds Harvester's own Seeder
// running, and leaves the Inventories to it.
var SeederRunning = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "equinix_addon_seeder_running",
	Help: "1 while Harvester Seeder runs (it renews its leader-election Lease): the addon then reconciles no Inventory.",
})

// SeederLeftoversTakenOver counts what Seeder left behind that the addon
// took over once Seeder no longer ran, by kind: webhook, finalizer,
// status, powerRequest, schema.
var SeederLeftoversTakenOver = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "equinix_addon_seeder_leftovers_taken_over_total",
	Help: "What Harvester Seeder left behind and the addon took over, by kind: its admission webhook removed, its finalizer removed from an Inventory, its conditions dropped, a power request it never ended carried out, the Inventory CRD given the addon's schema.",
}, []string{"leftover"})

// InventorySchemaOutdated is 1 while the live Inventory CRD lacks fields of
// the addon's schema that it could not add: the apiserver prunes them.
var InventorySchemaOutdated = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "equinix_addon_inventory_schema_outdated",
	Help: "1 while the live Inventory CRD lacks fields of the addon's schema (caBundle, systemID, timeout, status.hardware) and the addon could not update it: the apiserver drops those fields from every write.",
})

// AddonSpecRestored counts the times the harvester-seeder Addon's version
// and values were written back after Harvester's upgrade replaced them.
var AddonSpecRestored = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "equinix_addon_addon_spec_restored_total",
	Help: "Times the harvester-seeder Addon's chart version and values were written back after Harvester's upgrade replaced them with Seeder's.",
})

func init() {
	registry.MustRegister(SeederRunning, SeederLeftoversTakenOver, InventorySchemaOutdated, AddonSpecRestored)
}
