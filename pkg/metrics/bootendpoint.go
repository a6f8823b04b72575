package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

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

	// OwnedBootPhase times each step of a server people own from its claim
	// to a Ready node, observed once per server as the step ends.
	OwnedBootPhase = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "equinix_addon_owned_boot_phase_seconds",
		Help: "Time of each phase of a server people own from its claim to a Ready node, by phase: " +
			BootPhasePowerOn + " (claim to powered on for a network boot), " +
			BootPhaseNetworkBoot + " (the power command to the installer script served), " +
			BootPhaseInstallerStart + " (script to the install configuration served), " +
			BootPhaseInstall + " (configuration to the node registered), " +
			BootPhaseNodeReady + " (node registered to Ready), " +
			BootPhaseClaimToReady + " (the whole way).",
		// From the sub-second steps of a simulated server to the longest
		// install the addon waits for.
		Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900, 1200, 1800, 2700, 3600},
	}, []string{"phase"})
)

// The phases of OwnedBootPhase.
const (
	BootPhasePowerOn        = "power_on"
	BootPhaseNetworkBoot    = "network_boot"
	BootPhaseInstallerStart = "installer_start"
	BootPhaseInstall        = "install"
	BootPhaseNodeReady      = "node_ready"
	BootPhaseClaimToReady   = "claim_to_ready"
)

// ObserveBootPhase records a phase that began at from and ended at to;
// a phase whose start is unknown (a status written before the addon
// kept it) is not observed.
func ObserveBootPhase(phase string, from, to time.Time) {
	if from.IsZero() || to.Before(from) {
		return
	}
	OwnedBootPhase.WithLabelValues(phase).Observe(to.Sub(from).Seconds())
}

func init() {
	registry.MustRegister(BootRefused, BootServed, OwnedBootPhase)
}
