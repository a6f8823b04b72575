package instance

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/fencing"
)

// fencerOwns says why the pool must leave the power of an owned server
// alone, or "": the fencer switched it off (or is switching it off) and
// owns its power until it lifts the fence. A cycle would switch on a server
// whose VMs are starting elsewhere, and the fencer would switch it off
// again.
func fencerOwns(inv *seederv1alpha1.Inventory) string {
	if !fencing.Fencing(inv.Status.Conditions) {
		return ""
	}
	return fmt.Sprintf("its node is fenced (Inventory %s/%s, condition %s): the fencer switched the server off and owns its power, "+
		"so the pool does not power-cycle it", inv.Namespace, inv.Name, equinixv1.BMCFenced)
}

// fencerSwitchingOff says, for a server to release that is not off yet,
// whether the fencer's own power-off is on its way (Fenced Unknown): the
// release waits for it rather than send a second command. The fencer ends
// that state within minutes, off or failed.
func fencerSwitchingOff(inv *seederv1alpha1.Inventory) string {
	c := conditions.Get(inv.Status.Conditions, equinixv1.BMCFenced)
	if c == nil || c.Status != metav1.ConditionUnknown {
		return ""
	}
	return fmt.Sprintf("the fencer is switching server %s off (Inventory condition %s %s); it is released once it is off", inv.Name, equinixv1.BMCFenced, c.Reason)
}

// shutDownServer reads the owned server's node's out-of-service taint
// against its BMC, as the fencer does (fencing.TaintedNotFenced). A taint
// whose server the BMC shows off was put there by someone who shut the
// server down: why says the pool leaves it so. A taint while the server
// runs is no fence (Harvester's node-down handling taints a silent node
// without asking its BMC): unfenced says so, and the pool's cycle goes
// ahead, which ends what still runs there.
func (r *run) shutDownServer(inv *seederv1alpha1.Inventory, power fencing.PowerReader) (why, unfenced string, err error) {
	node, err := r.h.nodes.Cache().Get(r.Obj.NodeName())
	if apierrors.IsNotFound(err) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("reading node %s: %w", r.Obj.NodeName(), err)
	}
	node = r.h.written.Latest(node)
	if !common.OwnedNode(node, r.Obj) || !fencing.OutOfServiceTainted(node) {
		return "", "", nil
	}
	if unfenced = fencing.TaintedNotFenced(inv.Status.Conditions, node, power); unfenced != "" {
		return "", unfenced, nil
	}
	return fmt.Sprintf("node %s is tainted out-of-service and its BMC shows server %s off: it was shut down, so the pool does not power-cycle it",
		node.Name, inv.Name), "", nil
}
