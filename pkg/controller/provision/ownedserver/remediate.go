package ownedserver

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

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
// server the fencer switched off is not cycled (see fencedServer): the
// replacement alone follows.
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
	if why, err := r.fencedServer(inv); err != nil || why != "" {
		if c := conditions.Get(st.Conditions, equinixv1.InstanceReady); why != "" && c != nil {
			r.SetCondition(equinixv1.InstanceReady, c.Status, c.Reason, c.Message+"; "+why)
		}
		// The pool's replacement at the end of nodeCleanupWaitInterval
		// still comes; the Inventory's watch brings the Instance back
		// when the fence is lifted.
		return err
	}
	m, ok, err := r.bmcMachine(inv, equinixv1.InstanceReady)
	if err != nil || !ok {
		return err
	}
	defer m.Release(0)
	st.PowerCycles++
	st.PowerRequestedAt = r.NowTime()
	cycles := st.PowerCycles
	if err := r.Persist(); err != nil {
		return err
	}
	if err := m.Power(r.p.ctx, machine.ActionReboot); err != nil && !machine.MaybeApplied(err) {
		return fmt.Errorf("server %s, power cycle: %w", inv.Name, err)
	}
	r.Eventf(equinixv1.ReasonPowerCycled, "node %s stays not Ready: power-cycled server %s through its BMC (%d of %d before it is replaced)",
		r.Obj.NodeName(), inv.Name, cycles, maxPowerCycles)
	r.Requeue(step)
	return nil
}

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
	node, err := r.p.nodes.Get(r.Obj.NodeName())
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading node %s: %w", r.Obj.NodeName(), err)
	}
	node = r.p.nodeWrites.Latest(node)
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
