package harvester

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Node labels and annotations Harvester reads and writes (pkg/util/constants.go,
// pkg/util/node.go, pkg/util/drainhelper/helper.go).
const (
	LabelManaged             = "harvesterhci.io/managed"
	LabelRoleMaster          = "node-role.kubernetes.io/master"
	LabelRoleControlPlane    = "node-role.kubernetes.io/control-plane"
	LabelRoleEtcd            = "node-role.kubernetes.io/etcd"
	LabelRoleWitness         = "node-role.harvesterhci.io/witness"
	AnnotationDrainRequested = "harvesterhci.io/drain-requested"
	AnnotationDrainForced    = "harvesterhci.io/drain-forced"
	AnnotationMaintainStatus = "harvesterhci.io/maintain-status"
	AnnotationPromoteStatus  = "harvesterhci.io/promote-status"
	PromoteStatusRunning     = "running"

	// MinManagementNodes is how many management nodes Harvester keeps: three
	// etcd members tolerate one failure.
	MinManagementNodes = 3
)

// MaintenanceState is the value of the harvesterhci.io/maintain-status annotation.
type MaintenanceState string

// Maintenance states. Harvester sets running once it drained the node and
// completed once no VM instance is left on it.
const (
	MaintenanceNone      MaintenanceState = ""
	MaintenanceRunning   MaintenanceState = "running"
	MaintenanceCompleted MaintenanceState = "completed"
)

// IsManagementNode mirrors Harvester's IsManagementRole: the first role label
// present among master, control-plane and etcd decides, and only "true" counts.
// Witness nodes carry the etcd label and so count: they are etcd members.
func IsManagementNode(node *corev1.Node) bool {
	if node == nil {
		return false
	}
	for _, key := range []string{LabelRoleMaster, LabelRoleControlPlane, LabelRoleEtcd} {
		if value, ok := node.Labels[key]; ok {
			return value == "true"
		}
	}
	return false
}

// ManagementNodes returns the management nodes among nodes, in order.
func ManagementNodes(nodes []*corev1.Node) []*corev1.Node {
	var out []*corev1.Node
	for _, node := range nodes {
		if IsManagementNode(node) {
			out = append(out, node)
		}
	}
	return out
}

// NodeReadyCondition returns a copy of the node's Ready condition, or nil when
// the kubelet has not reported one.
func NodeReadyCondition(node *corev1.Node) *corev1.NodeCondition {
	if node == nil {
		return nil
	}
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			c := node.Status.Conditions[i]
			return &c
		}
	}
	return nil
}

// IsNodeReady reports whether the node's Ready condition is True.
func IsNodeReady(node *corev1.Node) bool {
	c := NodeReadyCondition(node)
	return c != nil && c.Status == corev1.ConditionTrue
}

// UnhealthySince reports whether the node is unhealthy (Ready False, Unknown
// or missing) and since when. The time is the Ready condition's
// lastTransitionTime, not lastHeartbeatTime: a kubelet that keeps reporting
// Ready=False refreshes its heartbeat, which would restart the clock forever.
// Without a usable transition time the node's creation time is used. Times
// after now (clock skew) are clamped to now. A nil node is reported healthy:
// a server whose node never appeared is the startup timeout's business.
func UnhealthySince(node *corev1.Node, now time.Time) (since time.Time, unhealthy bool) {
	if node == nil {
		return time.Time{}, false
	}
	c := NodeReadyCondition(node)
	if c != nil && c.Status == corev1.ConditionTrue {
		return time.Time{}, false
	}
	switch {
	case c != nil && !c.LastTransitionTime.IsZero():
		since = c.LastTransitionTime.Time
	case !node.CreationTimestamp.IsZero():
		since = node.CreationTimestamp.Time
	default:
		since = now
	}
	if since.After(now) {
		since = now
	}
	return since, true
}

// IsCordoned reports whether the node is marked unschedulable.
func IsCordoned(node *corev1.Node) bool {
	return node != nil && node.Spec.Unschedulable
}

// RequestMaintenance returns a copy of node asking Harvester for maintenance
// mode, exactly what the UI's enableMaintenanceMode action writes. Harvester
// drops the annotation again if it refuses (see MaintenancePossible).
func RequestMaintenance(node *corev1.Node) *corev1.Node {
	if node == nil {
		return nil
	}
	out := node.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[AnnotationDrainRequested] = "true"
	return out
}

// MaintenanceRequested reports whether maintenance mode was requested and not
// yet dropped by Harvester.
func MaintenanceRequested(node *corev1.Node) bool {
	return node != nil && node.Annotations[AnnotationDrainRequested] == "true"
}

// MaintenanceUnderWay reports whether maintenance mode was asked for the
// node (the drain-requested annotation) or Harvester is in it
// (maintain-status): VMs are leaving the node, or have left.
func MaintenanceUnderWay(node *corev1.Node) bool {
	return MaintenanceRequested(node) || MaintenanceStatus(node) != MaintenanceNone
}

// MaintenanceStatus returns the node's harvesterhci.io/maintain-status.
func MaintenanceStatus(node *corev1.Node) MaintenanceState {
	if node == nil {
		return MaintenanceNone
	}
	return MaintenanceState(node.Annotations[AnnotationMaintainStatus])
}

// IsPromoting reports whether Harvester is promoting the node to management.
func IsPromoting(node *corev1.Node) bool {
	return node != nil && node.Annotations[AnnotationPromoteStatus] == PromoteStatusRunning
}

// RemovalKeepsQuorum decides whether candidate may be removed from the cluster
// without endangering etcd, and says why. Worker nodes always may, unless
// Harvester is promoting them. A management node may go only if at least
// MinManagementNodes other management nodes are Ready and not being deleted,
// those are a quorum of the remaining etcd members, and no promotion is under
// way. Harvester promotes a replacement only after a management node is
// deleted, so removing one of three would leave two members with no tolerance
// for a failure: add a node first, or remove a worker.
func RemovalKeepsQuorum(nodes []*corev1.Node, candidate *corev1.Node) (bool, string) {
	if candidate == nil {
		return false, "no node given"
	}
	if !IsManagementNode(candidate) {
		if IsPromoting(candidate) {
			return false, fmt.Sprintf("node %s is being promoted to a management node; removing it mid-promotion blocks further promotions", candidate.Name)
		}
		return true, fmt.Sprintf("node %s is not a management node; removing it does not change etcd membership", candidate.Name)
	}
	if promoting := promotingNodes(nodes, candidate.Name); len(promoting) > 0 {
		return false, fmt.Sprintf("management node %s cannot be removed while Harvester promotes %s; etcd membership is changing", candidate.Name, strings.Join(promoting, ", "))
	}
	members, healthy := remainingManagement(nodes, candidate.Name)
	if healthy < MinManagementNodes {
		return false, fmt.Sprintf("removing management node %s would leave %d healthy management node(s) of %d; Harvester needs %d so etcd tolerates a failure, and it promotes a replacement only after a deletion: add a node before removing this one", candidate.Name, healthy, members, MinManagementNodes)
	}
	if quorum := members/2 + 1; healthy < quorum {
		return false, fmt.Sprintf("removing management node %s would leave %d healthy of %d etcd members, below the quorum of %d", candidate.Name, healthy, members, quorum)
	}
	return true, fmt.Sprintf("removing management node %s leaves %d healthy management nodes of %d", candidate.Name, healthy, members)
}

func promotingNodes(nodes []*corev1.Node, except string) []string {
	var names []string
	for _, node := range nodes {
		if node != nil && node.Name != except && IsPromoting(node) {
			names = append(names, node.Name)
		}
	}
	slices.Sort(names)
	return names
}

// remainingManagement counts the management nodes other than except (the etcd
// members left after its removal) and those of them that are Ready and not
// being deleted.
func remainingManagement(nodes []*corev1.Node, except string) (members, healthy int) {
	for _, node := range ManagementNodes(nodes) {
		if node.Name == except {
			continue
		}
		members++
		if node.DeletionTimestamp == nil && IsNodeReady(node) {
			healthy++
		}
	}
	return members, healthy
}

// MaintenancePossible predicts whether Harvester's node-drain controller will
// accept a maintenance request for candidate (drainhelper.DrainPossible), so
// the caller can report a refusal instead of waiting for a status that never
// comes. Harvester looks only at whether the control-plane or etcd label is
// present, whatever its value: such a node may enter maintenance only when the
// control-plane and etcd nodes, candidate included, number exactly three
// without a maintain-status annotation.
func MaintenancePossible(nodes []*corev1.Node, candidate *corev1.Node) (bool, string) {
	if candidate == nil {
		return false, "no node given"
	}
	if !hasControlPlaneLabel(candidate) {
		return true, fmt.Sprintf("node %s is not a control-plane node", candidate.Name)
	}
	controlPlane := map[string]*corev1.Node{candidate.Name: candidate}
	for _, node := range nodes {
		if node != nil && hasControlPlaneLabel(node) {
			controlPlane[node.Name] = node
		}
	}
	if len(controlPlane) == 1 {
		return false, fmt.Sprintf("node %s is the only control-plane node; Harvester refuses maintenance mode for it", candidate.Name)
	}
	available := 0
	for _, node := range controlPlane {
		if _, inMaintenance := node.Annotations[AnnotationMaintainStatus]; !inMaintenance {
			available++
		}
	}
	if available != MinManagementNodes {
		return false, fmt.Sprintf("Harvester allows maintenance mode for control-plane node %s only when exactly %d control-plane nodes are out of maintenance; there are %d", candidate.Name, MinManagementNodes, available)
	}
	return true, fmt.Sprintf("%d control-plane nodes are out of maintenance", available)
}

func hasControlPlaneLabel(node *corev1.Node) bool {
	_, cp := node.Labels[LabelRoleControlPlane]
	_, etcd := node.Labels[LabelRoleEtcd]
	return cp || etcd
}

// NodeInternalIP is the node's first InternalIP address as its kubelet
// reports it, "" when it reports none yet.
func NodeInternalIP(node *corev1.Node) string {
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}
