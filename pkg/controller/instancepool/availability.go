package instancepool

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// nodeList reads the Nodes from the cache once per run.
func (r *poolRun) nodeList() ([]*corev1.Node, error) {
	if r.nodes != nil {
		return r.nodes, nil
	}
	nodes, err := r.h.nodes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	r.nodes = nodes
	return nodes, nil
}

func nodesByName(nodes []*corev1.Node) map[string]*corev1.Node {
	out := make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		out[n.Name] = n
	}
	return out
}

// availability says whether a server takes workloads: managed (its node
// Ready), not being removed, and its node neither cordoned nor in Harvester
// maintenance mode, since VMs leave such a node. A Node the cache has not
// seen counts as unavailable: a rollout would rather wait than guess.
func availability(nodes []*corev1.Node) func(*equinixv1.Instance) bool {
	byName := nodesByName(nodes)
	return func(inst *equinixv1.Instance) bool {
		if inst.DeletionTimestamp != nil || inst.Status.Status != equinixv1.PhaseManaged || !networkFinal(inst) {
			return false
		}
		node := byName[inst.Status.NodeName]
		return node != nil && !harvester.IsCordoned(node) && !harvester.MaintenanceUnderWay(node)
	}
}

// networkFinal reports whether a server's ports are in its pool's type.
// The layer-2 types install in hybrid-bonded and convert after the join,
// which cuts the node's network for a moment: a server counts as available
// only once that is behind it, or a rollout would remove an old server
// while its successor is about to drop out.
func networkFinal(inst *equinixv1.Instance) bool {
	want := inst.Spec.NetworkingConfiguration.Type
	if want != equinixv1.NetworkTypeLayer2Bonded && want != equinixv1.NetworkTypeLayer2Individual {
		return true
	}
	return inst.Status.NetworkType == want && conditions.IsTrue(inst.Status.Conditions, equinixv1.InstanceNetworkConfigured)
}

// NetworkFinal is networkFinal for the fault campaign, whose rollout watch
// counts available servers as maxUnavailable does.
func NetworkFinal(inst *equinixv1.Instance) bool { return networkFinal(inst) }

// quorumHold keeps a rollout from removing a management node the etcd
// quorum needs, and from removing one while another of the pool's is on its
// way out: its Node stays Ready through maintenance until the device is
// gone, so the quorum check alone would count it as staying.
func quorumHold(nodes []*corev1.Node, insts []*equinixv1.Instance) func(*equinixv1.Instance) string {
	byName := nodesByName(nodes)
	managerTaken := ""
	for _, i := range insts {
		if i.DeletionTimestamp != nil && harvester.IsManagementNode(byName[i.Status.NodeName]) {
			managerTaken = i.Name
		}
	}
	return func(inst *equinixv1.Instance) string {
		node := byName[inst.Status.NodeName]
		if node == nil || !harvester.IsManagementNode(node) {
			return ""
		}
		if managerTaken != "" {
			return fmt.Sprintf("%s is a management node and waits until %s, also a management node, is gone", inst.Name, managerTaken)
		}
		if ok, why := harvester.RemovalKeepsQuorum(nodes, node); !ok {
			return fmt.Sprintf("%s (%s)", inst.Name, why)
		}
		managerTaken = inst.Name
		return ""
	}
}

// countUnhealthy counts the joined servers whose node is not Ready.
func countUnhealthy(insts []*equinixv1.Instance) int {
	n := 0
	for _, i := range insts {
		if i.Status.JoinedAt != nil && i.Status.Status == equinixv1.PhaseUnhealthy {
			n++
		}
	}
	return n
}
