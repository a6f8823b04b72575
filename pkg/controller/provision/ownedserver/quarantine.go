package ownedserver

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
)

// defaultQuarantineAfter is remediation.quarantineAfter when unset: a
// server that failed twice in a row is more likely broken than unlucky.
const defaultQuarantineAfter = 2

// defaultStartupTimeout is remediation.startupTimeout when unset (the
// CRD's default).
const defaultStartupTimeout = 45 * time.Minute

// Quarantined reports whether a person must clear the server before a pool
// claims it again.
func Quarantined(inv *seederv1alpha1.Inventory) bool {
	return common.Quarantined(inv)
}

// failedInstalls is the server's count of failures in a row.
func failedInstalls(inv *seederv1alpha1.Inventory) int {
	n, err := strconv.Atoi(inv.Annotations[equinixv1.AnnotationFailedInstalls])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// quarantineAfter is the pool's remediation.quarantineAfter, or its
// default.
func quarantineAfter(pool *equinixv1.InstancePool) int {
	if pool == nil || pool.Spec.Remediation.QuarantineAfter <= 0 {
		return defaultQuarantineAfter
	}
	return int(pool.Spec.Remediation.QuarantineAfter)
}

// installFailed says why an Instance that lets its server go counts as a
// failed install of that server, "" when it does not: it was booted, never
// joined, and ran out of the pool's startup time from its network boot
// (as the pool counts it, and replaces it then) or failed. A scale-down
// before the timeout is no failure.
func installFailed(inst *equinixv1.Instance, pool *equinixv1.InstancePool, now time.Time) string {
	st := inst.Status
	if st.JoinedAt != nil || st.NetworkBootRequestedAt == nil || pool == nil {
		return ""
	}
	if st.Status == equinixv1.PhaseFailed {
		return "its Instance " + inst.Name + " failed"
	}
	timeout := defaultStartupTimeout
	if d := pool.Spec.Remediation.StartupTimeout; d != nil {
		timeout = d.Duration
	}
	if now.Sub(st.NetworkBootRequestedAt.Time) >= timeout {
		return fmt.Sprintf("its Instance %s did not join within remediation.startupTimeout (%s)", inst.Name, timeout)
	}
	return ""
}

// countFailure records a failed install on a copy of the server's
// Inventory (the caller writes it with the release of the claim), and
// quarantines it at the pool's limit. It returns the quarantine's
// message, "" when the server stays claimable.
func countFailure(inv *seederv1alpha1.Inventory, why string, limit int) string {
	n := failedInstalls(inv) + 1
	if inv.Annotations == nil {
		inv.Annotations = map[string]string{}
	}
	inv.Annotations[equinixv1.AnnotationFailedInstalls] = strconv.Itoa(n)
	if n < limit {
		return ""
	}
	msg := fmt.Sprintf("server %s failed to install or join %d times in a row (last: %s); it is quarantined and no pool claims it "+
		"until a person checks it and removes the label: kubectl -n %s label inventory %s %s-",
		inv.Name, n, why, inv.Namespace, inv.Name, equinixv1.LabelQuarantined)
	if inv.Labels == nil {
		inv.Labels = map[string]string{}
	}
	inv.Labels[equinixv1.LabelQuarantined] = "true"
	inv.Annotations[equinixv1.AnnotationQuarantineReason] = msg
	return msg
}

// quarantinedMessage adds the quarantined servers to the message that no
// server is free.
func quarantinedMessage(names []string) string {
	return fmt.Sprintf("; %d server(s) that would be free are quarantined after failing to install or join (%s): check each, "+
		"then remove its label %s to let the pools claim it again", len(names), strings.Join(names, ", "), equinixv1.LabelQuarantined)
}
