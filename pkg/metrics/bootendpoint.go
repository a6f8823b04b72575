package metrics

import (
	"sync"
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
		// From the steps of a server that boots in a second or two (a BMC
		// command, a file served: tens of milliseconds) to the longest
		// install the addon waits for (45 minutes).
		Buckets: []float64{0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 2700, 3600},
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

// The steps of a server's boot whose times this process keeps (see
// MarkBootStep): each begins a phase of OwnedBootPhase.
const (
	BootStepClaimed        = "claimed"
	BootStepPowerRequested = "power_requested"
	BootStepScriptServed   = "script_served"
	BootStepConfigServed   = "config_served"
	BootStepNodeRegistered = "node_registered"
)

// bootSteps are the times of the boot steps this process stored, to the
// nanosecond, by Instance name. The status keeps the same times as API
// times, in whole seconds: a phase of 30 ms measured from one would be
// observed as anything up to a second.
var bootSteps = struct {
	sync.Mutex
	at map[string]map[string]time.Time
}{at: map[string]map[string]time.Time{}}

// MarkBootStep keeps the time at which a step of the Instance's boot was
// stored in its status.
func MarkBootStep(instance, step string, at time.Time) {
	bootSteps.Lock()
	defer bootSteps.Unlock()
	if bootSteps.at[instance] == nil {
		bootSteps.at[instance] = map[string]time.Time{}
	}
	bootSteps.at[instance][step] = at
}

// BootStepTime is the time of the Instance's step as this process kept it,
// while the status still holds that time (stored, to the second); else
// stored itself: a step stored again since, or by the process before a
// restart, is timed by the status.
func BootStepTime(instance, step string, stored time.Time) time.Time {
	bootSteps.Lock()
	defer bootSteps.Unlock()
	kept, ok := bootSteps.at[instance][step]
	if !ok || stored.IsZero() || !kept.Truncate(time.Second).Equal(stored.Truncate(time.Second)) {
		return stored
	}
	return kept
}

// ForgetBootSteps drops the Instance's step times: its boot ended, or it
// is gone.
func ForgetBootSteps(instance string) {
	bootSteps.Lock()
	defer bootSteps.Unlock()
	delete(bootSteps.at, instance)
}

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
