package metrics

import "github.com/prometheus/client_golang/prometheus"

// The boot endpoint's metrics (servers of one's own).
var (
	// BootRefused counts the boot endpoint's refusals by reason: a bounded
	// set of the API's reasons, never a MAC.
	BootRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "equinix_addon_boot_requests_refused_total",
		Help: "Requests the boot endpoint of owned servers refused, by reason (BootNoOpenClaim, BootUUIDMismatch, BootNonceMismatch, BootInvalidMAC, BootUnknownPath, BootScriptFailed, BootConfigFailed; on a replica that does not lead, BootNoLeader, BootLeaderUnreachable).",
	}, []string{"reason"})

	// BootServed counts what the boot endpoint served: installer scripts
	// and install configurations.
	BootServed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "equinix_addon_boot_files_served_total",
		Help: "Files the boot endpoint of owned servers served to a server with an open claim, by file (script, config).",
	}, []string{"file"})
)

func init() {
	registry.MustRegister(BootRefused, BootServed)
}
