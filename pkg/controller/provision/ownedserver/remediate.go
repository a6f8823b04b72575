package ownedserver

import (
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/fencing"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
)

// maxPowerCycles is how many times an unhealthy server is power-cycled
// before the pool replaces it.
const maxPowerCycles = 2

// remediateOwned power-cycles a joined server whose node stays not Ready:
// at each of the first maxPowerCycles parts of the pool's
// nodeCleanupWaitInterval, once, so that the pool's replacement at its end
// comes only after the cycles failed. A node that is not Ready has nothing
// to move, as for a server's removal. Without nodeCleanupWaitInterval
// (remediation off) nothing is done; a Ready node resets the count. A
// server the fencer switched off, or whose node is tainted out-of-service
// and its BMC shows it off, is not cycled (see fencerOwns and
// shutDownServer): the replacement alone follows.
func (r *run) remediateOwned() error {
	st := &r.Obj.Status
	if st.Status == equinixv1.PhaseManaged {
		st.PowerCycles = 0
		return nil
	}
	pool, err := r.p.pools.Get(r.Obj.Spec.PoolName)
	if err != nil || pool.Spec.NodeCleanupWaitInterval == nil || st.Status != equinixv1.PhaseUnhealthy || st.UnhealthySince == nil ||
		st.PowerCycles >= maxPowerCycles || r.Obj.OffOnRequest() {
		return nil //nolint:nilerr // a pool not in the cache cycles nothing
	}
	step := pool.Spec.NodeCleanupWaitInterval.Duration / (maxPowerCycles + 1)
	due := st.UnhealthySince.Add(time.Duration(st.PowerCycles+1) * step)
	if last := st.PowerRequestedAt; st.PowerCycles > 0 && last != nil && last.Add(step).After(due) {
		// A cycle's server gets a whole step to come back.
		due = last.Add(step)
	}
	if left := due.Sub(r.Now()); left > 0 {
		r.Requeue(left)
		return nil
	}
	inv, err := r.claimedServer()
	if err != nil || inv == nil {
		return err
	}
	// The pool's replacement at the end of nodeCleanupWaitInterval still
	// comes to a server left alone here; the Inventory's watch brings the
	// Instance back when the fence is lifted.
	if why := fencerOwns(inv); why != "" {
		r.leftAlone(why)
		return nil
	}
	m, ok, err := r.bmcMachine(inv, equinixv1.InstanceReady)
	if err != nil || !ok {
		return err
	}
	defer m.Release(0)
	why, unfenced, err := r.shutDownServer(inv, func() (machine.PowerState, error) { return m.PowerState(r.p.ctx) })
	if err != nil || why != "" {
		r.leftAlone(why)
		return err
	}
	st.PowerCycles++
	st.PowerRequestedAt = r.NowTime()
	cycles := st.PowerCycles
	if err := r.Persist(); err != nil {
		return err
	}
	if err := m.Power(r.p.ctx, machine.ActionReboot); err != nil && !machine.MaybeApplied(err) {
		return fmt.Errorf("server %s, power cycle: %w", inv.Name, err)
	}
	if unfenced != "" {
		unfenced = fmt.Sprintf("; %s: tainted but not fenced, so the cycle also ends what still ran there", unfenced)
	}
	r.Eventf(equinixv1.ReasonPowerCycled, "node %s stays not Ready: power-cycled server %s through its BMC (%d of %d before it is replaced)%s",
		r.Obj.NodeName(), inv.Name, cycles, maxPowerCycles, unfenced)
	r.Requeue(step)
	return nil
}

// leftAlone says on the Ready condition why the pool does not power-cycle
// the server.
func (r *run) leftAlone(why string) {
	if c := conditions.Get(r.Obj.Status.Conditions, equinixv1.InstanceReady); why != "" && c != nil {
		r.SetCondition(equinixv1.InstanceReady, c.Status, c.Reason, c.Message+"; "+why)
	}
}

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
	node, err := r.p.nodes.Get(r.Obj.NodeName())
	if apierrors.IsNotFound(err) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("reading node %s: %w", r.Obj.NodeName(), err)
	}
	node = r.p.nodeWrites.Latest(node)
	if !common.OwnedNode(node, r.Obj) || !fencing.OutOfServiceTainted(node) {
		return "", "", nil
	}
	if unfenced = fencing.TaintedNotFenced(inv.Status.Conditions, node, power); unfenced != "" {
		return "", unfenced, nil
	}
	return fmt.Sprintf("node %s is tainted out-of-service and its BMC shows server %s off: it was shut down, so the pool does not power-cycle it",
		node.Name, inv.Name), "", nil
}
