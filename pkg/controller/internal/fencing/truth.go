package fencing

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
)

// What an out-of-service taint means for a server's power is one truth,
// read by the fencer and by the owned pools alike: the taint says the node
// is shut down, but only the BMC can say its server is. Harvester's
// node-down handling puts the taint on a node that has been silent for a
// while, without asking; so does a person following the Kubernetes docs.
// A tainted node is fenced only when its server is confirmed off: by the
// fencer (Fenced True, which it sets only once the BMC showed it off), or
// by the BMC now. Otherwise its VMs may start on other hosts while it
// still runs.

// PowerReader reads a server's power from its BMC.
type PowerReader func() (machine.PowerState, error)

// TaintedNotFenced says why a node carries the out-of-service taint while
// its server is not confirmed off, or "" when it carries none or its
// server is: the fencer fenced it (conds, the Inventory's conditions), or
// power (read only when the answer depends on it) shows it off.
func TaintedNotFenced(conds []metav1.Condition, node *corev1.Node, power PowerReader) string {
	if !outOfServiceTainted(node) || conditions.IsTrue(conds, equinixv1.BMCFenced) {
		return ""
	}
	if power == nil {
		return fmt.Sprintf("node %s is tainted %s, and its server's power cannot be read (its BMC cannot be used)", node.Name, corev1.TaintNodeOutOfService)
	}
	state, err := power()
	switch {
	case err != nil:
		return fmt.Sprintf("node %s is tainted %s, and its server's power cannot be read (%s)", node.Name, corev1.TaintNodeOutOfService, failure.Message(err))
	case state == machine.PowerOff:
		return ""
	}
	return fmt.Sprintf("node %s is tainted %s while its BMC shows its server %s", node.Name, corev1.TaintNodeOutOfService, state)
}

// outOfServiceTainted says whether the node carries an out-of-service
// taint of effect NoExecute, whoever put it there (the fencer's has the
// value nodeshutdown, Harvester's none).
func outOfServiceTainted(node *corev1.Node) bool {
	if node == nil {
		return false
	}
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeOutOfService && t.Effect == corev1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

// OutOfServiceTainted is outOfServiceTainted for the pools.
func OutOfServiceTainted(node *corev1.Node) bool { return outOfServiceTainted(node) }

// reportUnfencedTaint tells, after a pass, whether the node carries an
// out-of-service taint while its server is not confirmed off: counted in
// equinix_addon_nodes_tainted_unfenced while it lasts, and a Warning Event
// on the Node as it begins, which says what the fencer is doing about it.
// Nothing is switched here: the fence itself, past its guards, is what
// switches the server off.
func (s *step) reportUnfencedTaint() {
	var power PowerReader
	if s.m != nil {
		power = s.powerState
	}
	why := TaintedNotFenced(s.t.Conditions(), s.node, power)
	if !s.f.noteUnfenced(s.t.Name(), why != "") {
		return
	}
	status := "the fencer has not acted yet"
	if c := conditions.Get(s.t.Conditions(), equinixv1.BMCFenced); c != nil {
		status = fmt.Sprintf("the fence is %s: %s", c.Reason, c.Message)
	}
	s.f.recorder.Event(s.node, corev1.EventTypeWarning, equinixv1.ReasonFenceTaintedNotFenced, fmt.Sprintf(
		"%s: the node is tainted but not fenced, so its VMs may start on other hosts while it still runs and writes to their volumes "+
			"(someone else put the taint on: Harvester's node-down handling, or a person); %s", why, status))
}
