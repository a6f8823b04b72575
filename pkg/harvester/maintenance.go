package harvester

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Harvester's MaintenanceMode node condition, which its releases since the
// condition-driven maintenance flow set (pkg/util/maintenance.go): True with
// reason Evacuating once the drain is done and VMs are being handled, then
// Completed. Releases before it report maintenance only through the
// maintain-status annotation.
const (
	NodeConditionMaintenanceMode = corev1.NodeConditionType("MaintenanceMode")
	MaintenanceReasonEvacuating  = "Evacuating"
	MaintenanceReasonCompleted   = "Completed"
)

// PowerActionsAllowed says whether Harvester would let a power action reach
// the node's machine, and why: the node is in maintenance mode, drained.
// Where the node has a MaintenanceMode condition it decides (True with
// reason Evacuating or Completed, as Harvester's own powerAction checks);
// without one, the older annotation maintain-status must be set.
func PowerActionsAllowed(node *corev1.Node) (bool, string) {
	if node == nil {
		return false, "the node does not exist"
	}
	for _, c := range node.Status.Conditions {
		if c.Type != NodeConditionMaintenanceMode {
			continue
		}
		if c.Status == corev1.ConditionTrue && (c.Reason == MaintenanceReasonEvacuating || c.Reason == MaintenanceReasonCompleted) {
			return true, fmt.Sprintf("node %s is in maintenance mode (%s)", node.Name, c.Reason)
		}
		return false, fmt.Sprintf("node %s is not drained for maintenance yet (condition MaintenanceMode=%s, %s)", node.Name, c.Status, c.Reason)
	}
	if s := MaintenanceStatus(node); s != MaintenanceNone {
		return true, fmt.Sprintf("node %s is in maintenance mode (maintain-status %s)", node.Name, s)
	}
	return false, fmt.Sprintf("node %s is not in maintenance mode", node.Name)
}

// HasMaintenanceMode reports whether a Harvester release has the
// annotation-driven maintenance mode (v1.2.0 and later); older ones are
// cordoned and drained by hand.
func HasMaintenanceMode(version string) bool {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return err1 == nil && err2 == nil && (major > 1 || major == 1 && minor >= 2)
}

// MaintenancePatch is the merge patch that asks Harvester for maintenance
// mode, as its enableMaintenanceMode action does (forced: VMs that cannot
// migrate are shut down rather than holding the drain), or, on a release
// without maintenance mode, cordons the node.
func MaintenancePatch(modeAvailable, force bool) []byte {
	if !modeAvailable {
		return []byte(`{"spec":{"unschedulable":true}}`)
	}
	if force {
		return []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:"true",%q:"true"}}}`, AnnotationDrainRequested, AnnotationDrainForced))
	}
	return []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, AnnotationDrainRequested))
}
