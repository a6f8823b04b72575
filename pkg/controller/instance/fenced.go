package instance

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/fencing"
)

// fencedServer says why the pool must leave the power of an owned server
// alone, or "" when it may cycle it: the fencer switched it off (or is
// switching it off) and owns its power until it lifts the fence, or its
// node carries the out-of-service taint, by which someone declared it shut
// down. A cycle would switch on a server whose VMs are starting elsewhere,
// and the fencer would switch it off again.
func (r *run) fencedServer(inv *seederv1alpha1.Inventory) (string, error) {
	if fencing.Fencing(inv.Status.Conditions) {
		return fmt.Sprintf("its node is fenced (Inventory %s/%s, condition %s): the fencer switched the server off and owns its power, "+
			"so the pool does not power-cycle it", inv.Namespace, inv.Name, equinixv1.BMCFenced), nil
	}
	node, err := r.h.nodes.Cache().Get(r.Obj.NodeName())
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading node %s: %w", r.Obj.NodeName(), err)
	}
	node = r.h.written.Latest(node)
	if common.OwnedNode(node, r.Obj) && outOfService(node) {
		return fmt.Sprintf("node %s is tainted %s: its server was declared shut down, so the pool does not power-cycle it",
			node.Name, corev1.TaintNodeOutOfService), nil
	}
	return "", nil
}

func outOfService(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeOutOfService {
			return true
		}
	}
	return false
}
