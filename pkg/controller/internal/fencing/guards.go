package fencing

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// held is a guard that keeps a node from being fenced: the reason and
// what to tell.
type held struct {
	reason, message string
}

// inMaintenance says whether the node is in Harvester maintenance mode or
// on its way there: its VMs are being moved by Harvester already, and a
// person is at work on it.
func inMaintenance(node *corev1.Node) (bool, string) {
	if ok, why := harvester.PowerActionsAllowed(node); ok {
		return true, why
	}
	if _, asked := node.Annotations[harvester.AnnotationDrainRequested]; asked {
		return true, fmt.Sprintf("node %s is being put into maintenance mode", node.Name)
	}
	for _, c := range node.Status.Conditions {
		if c.Type == harvester.NodeConditionMaintenanceMode && c.Status == corev1.ConditionTrue {
			return true, fmt.Sprintf("node %s is in maintenance mode (%s)", node.Name, c.Reason)
		}
	}
	return false, ""
}

// quorum is the guard against fencing from the wrong side of a partition:
// when more than half of the nodes, or the controller's own node, look
// NotReady, the controller is more likely cut off than they are dead.
func quorum(nodes []*corev1.Node, own string) *held {
	notReady := 0
	for _, n := range nodes {
		if harvester.IsNodeReady(n) {
			continue
		}
		notReady++
		if n.Name == own {
			return &held{equinixv1.ReasonFenceHeldByQuorum, fmt.Sprintf(
				"the controller's own node %s is NotReady too: this side may be the one cut off, so no node is fenced", own)}
		}
	}
	if 2*notReady > len(nodes) {
		return &held{equinixv1.ReasonFenceHeldByQuorum, fmt.Sprintf(
			"%d of %d nodes are NotReady: more than half looks like a partition of the controller's side, not dead hosts, "+
				"so no node is fenced", notReady, len(nodes))}
	}
	return nil
}

// joining is the guard for a pool's server that has not been Ready yet:
// it is installing Harvester or joining, so no VM or volume is on it to
// bring back, and a power-off would only break its install; its pool
// watches the install and replaces a server that never joins.
func (f *Fencer) joining(node *corev1.Node) *held {
	name := node.Labels[equinixv1.LabelInstance]
	if f.instances == nil || name == "" {
		return nil
	}
	inst, err := f.instances.Get(name)
	if err != nil || inst.Status.JoinedAt != nil {
		return nil //nolint:nilerr // an Instance not in the cache holds nothing back
	}
	return &held{equinixv1.ReasonFenceHeldJoining, fmt.Sprintf(
		"it is the server of Instance %s, which has not been Ready yet: nothing runs on it to bring back, and its pool watches the install", name)}
}

// guards runs the guards that need no BMC, in the order a person would
// ask: is it the controller's node, is a person at work on it, is the
// controller on the right side.
func (f *Fencer) guards(node *corev1.Node) (*held, error) {
	if node.Name == f.settings.OwnNode {
		return &held{equinixv1.ReasonFenceHeldOwnNode, fmt.Sprintf(
			"node %s runs the controller, which never fences its own node", node.Name)}, nil
	}
	if in, why := inMaintenance(node); in {
		return &held{equinixv1.ReasonFenceHeldMaintenance, why + ": a node in maintenance mode is never fenced"}, nil
	}
	nodes, err := f.nodes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	for i, n := range nodes {
		nodes[i] = f.nodeWrites.Latest(n)
	}
	return quorum(nodes, f.settings.OwnNode), nil
}

// fencing says whether an Inventory's Fenced condition counts against the
// bound: fenced, or a power-off sent.
func fencing(conds []metav1.Condition) bool {
	c := conditions.Get(conds, equinixv1.BMCFenced)
	return c != nil && c.Status != metav1.ConditionFalse
}

// reserve takes a place under the bound for name, unless the other
// fenced nodes fill it already; the count is the cache's Inventories and
// this process's own record, whichever says more.
func (f *Fencer) reserve(name string) *held {
	invs, _ := f.inventories.List(seederv1alpha1.InventoryNamespace, labels.Everything())
	f.mu.Lock()
	defer f.mu.Unlock()
	others := map[string]bool{}
	for n := range f.active {
		others[n] = true
	}
	for _, inv := range invs {
		if fencing(inv.Status.Conditions) {
			others[inv.Name] = true
		}
	}
	delete(others, name)
	if len(others) >= f.settings.MaxFenced {
		return &held{equinixv1.ReasonFenceHeldByBound, fmt.Sprintf(
			"%d node(s) are fenced or being fenced already, the most --fencing-max-fenced allows (%d)", len(others), f.settings.MaxFenced)}
	}
	f.active[name] = true
	metrics.FencedNodes.Set(float64(len(f.active)))
	return nil
}

// note records whether name is fenced (or being fenced) after a pass.
func (f *Fencer) note(name string, active bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if active {
		f.active[name] = true
	} else {
		delete(f.active, name)
	}
	metrics.FencedNodes.Set(float64(len(f.active)))
}
