package metrics

import "github.com/prometheus/client_golang/prometheus"

// The servers' health, as their BMCs report it, one series per node (and
// subsystem): the label values are node names and the BMC seam's fixed
// subsystem names only, never a BMC's address or a message. A node's
// series go when its Instance or inventory does (ForgetNode).
var (
	// HardwareHealth is a subsystem's health as a number, so that an alert
	// compares it: 0 OK, 1 Unknown (not reported), 2 Warning, 3 Critical.
	HardwareHealth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "equinix_addon_hardware_health",
		Help: "Health of a node's hardware subsystem as its BMC last reported it: 0 OK, 1 Unknown (not reported), 2 Warning, 3 Critical.",
	}, []string{"node", "subsystem"})

	// HardwarePredictedFailures counts the parts of a subsystem that
	// predict their own failure (a drive's SMART data).
	HardwarePredictedFailures = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "equinix_addon_hardware_predicted_failures",
		Help: "Parts of a node's hardware subsystem that predict their own failure (Redfish Drive.FailurePredicted, an IPMI drive slot's Predictive Failure), as the BMC last reported.",
	}, []string{"node", "subsystem"})

	// BMCReachable is 1 while the node's BMC answered its last contact
	// (even if only to refuse the credentials), 0 while it did not.
	BMCReachable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "equinix_addon_bmc_reachable",
		Help: "1 while the node's BMC answered the addon's last contact (even to refuse the credentials), 0 while it did not.",
	}, []string{"node"})

	// BMCAuthenticated is 1 while the node's BMC took the credentials at
	// the last contact, 0 while it refused them or could not be reached.
	BMCAuthenticated = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "equinix_addon_bmc_authenticated",
		Help: "1 while the node's BMC took the credentials at the addon's last contact, 0 while it refused them or was not reached.",
	}, []string{"node"})

	// HardwareLastPoll is when the node's BMC was last polled in full
	// (health and event log), or, before its first poll, when the addon
	// began to poll it: a poll overdue shows as its age.
	HardwareLastPoll = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "equinix_addon_hardware_last_poll_timestamp_seconds",
		Help: "Unix time of the last complete poll (health and event log) of the node's BMC; before the first, when the addon began to poll it.",
	}, []string{"node"})

	// HardwarePollInterval is how often the node's BMC is to be polled:
	// each inventory has its own, and the alerts count missed polls in it.
	HardwarePollInterval = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "equinix_addon_hardware_poll_interval_seconds",
		Help: "How often the node's BMC is polled (its inventory's poll interval), in seconds.",
	}, []string{"node"})
)

func init() {
	registry.MustRegister(HardwareHealth, HardwarePredictedFailures, BMCReachable, BMCAuthenticated, HardwareLastPoll, HardwarePollInterval)
}

// ForgetNode removes every hardware series of node: its Instance or
// inventory went.
func ForgetNode(node string) {
	match := prometheus.Labels{"node": node}
	for _, v := range []*prometheus.GaugeVec{HardwareHealth, HardwarePredictedFailures, BMCReachable, BMCAuthenticated, HardwareLastPoll, HardwarePollInterval} {
		v.DeletePartialMatch(match)
	}
	EventsForwarded.DeletePartialMatch(match)
}
