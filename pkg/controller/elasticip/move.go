package elasticip

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// verification is the last read that found an ElasticIP where it belongs.
type verification struct {
	node, device string
	at           time.Time
}

// atRest: the address was found on the device of the node kube-vip still
// names less than Resync ago, and no move is open. Such a pass makes no
// call; the next read is due at the end of the interval.
func (r *run) atRest(t target) bool {
	st := &r.Obj.Status
	if t.node == nil || st.Move != nil || st.Status != equinixv1.ElasticIPPhaseAssigned {
		return false
	}
	r.h.mu.Lock()
	v, ok := r.h.verified[r.Obj.Name]
	r.h.mu.Unlock()
	if !ok || v.node != t.node.Name || v.device != st.DeviceID {
		return false
	}
	left := r.h.settings.Resync - r.now.Sub(v.at)
	if left <= 0 {
		return false
	}
	r.gauge(1)
	r.Requeue(left)
	return true
}

func (h *Handler) verify(name string, v verification) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.verified[name] = v
}

func (h *Handler) forget(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.verified, name)
}

// match finds the device of the node kube-vip names. A node whose device is
// unknown is reported and the address left where it is.
func (r *run) match(c metal.Client, t target) (string, error) {
	m, err := r.h.matcher.Match(r.h.ctx, c, t.node)
	if cerr, ok := conditions.AsError(err); ok {
		r.SetCondition(equinixv1.ElasticIPHostMatched, metav1.ConditionFalse, cerr.Reason, cerr.Message)
		r.waiting(equinixv1.ElasticIPHostMatched)
		r.gauge(0)
		r.Requeue(r.h.settings.Resync)
		return "", nil
	}
	if err != nil {
		return "", r.metalFailure("listing the project's devices to find node "+t.node.Name+"'s", equinixv1.ElasticIPHostMatched, err)
	}
	r.SetCondition(equinixv1.ElasticIPHostMatched, metav1.ConditionTrue, equinixv1.ReasonHostMatched,
		fmt.Sprintf("kube-vip names node %s, which is device %s (found by its %s)", t.node.Name, m.DeviceID, m.By))
	return m.DeviceID, nil
}

// converge puts the address on dev. A move is stored before its first
// call; then the address is unassigned from wherever else it is and
// assigned to dev. Metal refuses to assign an address another device
// holds, so it is never on two devices; whatever interrupts the move, the
// next pass starts from what Metal then says.
func (r *run) converge(c metal.Client, res *metal.IPReservation, current []metal.IPAddress, dev, node string) error {
	st := &r.Obj.Status
	var here *metal.IPAddress
	var others []metal.IPAddress
	for i := range current {
		if current[i].DeviceID == dev {
			here = &current[i]
		} else {
			others = append(others, current[i])
		}
	}
	if here != nil && len(others) == 0 {
		r.arrived(*here, dev, node)
		return nil
	}
	if st.Move == nil || st.Move.ToDevice != dev {
		if ok, err := r.assignable(c, res, dev, node); err != nil || !ok {
			return err
		}
		r.startMove(others, dev, node)
		if err := r.Persist(); err != nil {
			return err
		}
	}
	r.gauge(0)
	for _, a := range others {
		err := c.UnassignIP(r.h.ctx, a.ID)
		if err != nil && !metal.IsNotFound(err) {
			return r.metalFailure(fmt.Sprintf("unassigning %s from device %s", r.Obj.Spec.Address, a.DeviceID), equinixv1.ElasticIPReady, err)
		}
	}
	if here == nil {
		a, err := c.AssignIP(r.h.ctx, dev, r.Obj.Spec.Address+"/32")
		if err != nil {
			return r.metalFailure(fmt.Sprintf("assigning %s to device %s", r.Obj.Spec.Address, dev), equinixv1.ElasticIPReady, err)
		}
		here = a
	}
	r.arrived(*here, dev, node)
	return nil
}

// startMove records the move: where from, where to, and since when
// kube-vip has named the new node (kept when kube-vip moves again before
// the move is over).
func (r *run) startMove(others []metal.IPAddress, dev, node string) {
	st := &r.Obj.Status
	since := metav1.NewTime(r.now)
	if st.Move != nil {
		since = st.Move.Since
	}
	move := &equinixv1.ElasticIPMove{ToDevice: dev, ToNode: node, Since: since}
	if len(others) > 0 {
		move.FromDevice, move.FromAssignment = others[0].DeviceID, others[0].ID
	} else if st.Move != nil {
		move.FromDevice, move.FromAssignment = st.Move.FromDevice, st.Move.FromAssignment
	}
	st.Move = move
	r.setPhase(equinixv1.ElasticIPPhaseMoving)
	r.gauge(0)
	from := "nowhere"
	if move.FromDevice != "" {
		from = "device " + move.FromDevice
	}
	r.SetCondition(equinixv1.ElasticIPReady, metav1.ConditionFalse, equinixv1.ReasonMoving, fmt.Sprintf(
		"kube-vip names node %s: moving %s from %s to its device %s", node, r.Obj.Spec.Address, from, dev))
}

// assignable checks, before anything is unassigned, that the device can
// take the address: Metal refuses a device in another metro or in layer 2,
// and unassigning first would leave the address nowhere.
func (r *run) assignable(c metal.Client, res *metal.IPReservation, dev, node string) (bool, error) {
	d, err := c.GetDevice(r.h.ctx, dev)
	if metal.IsNotFound(err) {
		r.h.matcher.Forget(c.ProjectID(), node)
		r.SetCondition(equinixv1.ElasticIPHostMatched, metav1.ConditionFalse, equinixv1.ReasonHostUnmatched,
			fmt.Sprintf("node %s's device %s no longer exists", node, dev))
		r.setPhase(equinixv1.ElasticIPPhaseWaiting)
		r.gauge(0)
		r.Requeue(r.h.settings.Resync)
		return false, nil
	}
	if err != nil {
		return false, r.metalFailure("reading device "+dev, equinixv1.ElasticIPReady, err)
	}
	var why string
	bond, hasBond := d.Port("bond0")
	switch {
	case d.State == metal.DeviceStateDeprovisioning:
		why = "it is being deleted"
	case res.Metro != "" && d.Metro != "" && !strings.EqualFold(res.Metro, d.Metro):
		why = fmt.Sprintf("it is in metro %s and reservation %s in metro %s", d.Metro, res.ID, res.Metro)
	case !hasBond || strings.HasPrefix(string(bond.NetworkType), "layer2"):
		why = "its network is in layer 2 mode, which takes no Elastic IP"
	}
	if why == "" {
		return true, nil
	}
	r.SetCondition(equinixv1.ElasticIPReady, metav1.ConditionFalse, equinixv1.ReasonAssignRefused, fmt.Sprintf(
		"kube-vip names node %s, but its device %s cannot take %s: %s; the address stays where it is", node, dev, r.Obj.Spec.Address, why))
	r.setPhase(equinixv1.ElasticIPPhaseWaiting)
	r.gauge(0)
	r.Requeue(refusedRetry)
	return false, nil
}

// arrived records the address on dev; a move that ends here is reported
// with one Event and counted once its status is stored.
func (r *run) arrived(a metal.IPAddress, dev, node string) {
	st := &r.Obj.Status
	st.DeviceID, st.AssignmentID = dev, a.ID
	msg := fmt.Sprintf("%s is assigned to device %s of node %s, which kube-vip names", r.Obj.Spec.Address, dev, node)
	if m := st.Move; m != nil {
		// Found on the target of an open move: this move put it there, even
		// if the answer to its assign was lost.
		st.AssignedByAddon = true
		st.Move, st.LastMoveTime = nil, &metav1.Time{Time: r.now}
		r.finished = m
		took := r.now.Sub(m.Since.Time).Round(10 * time.Millisecond)
		if m.FromDevice != "" {
			r.moveEvent = event{equinixv1.ReasonMoved, fmt.Sprintf("moved %s from device %s to device %s of node %s, %s after kube-vip named it",
				r.Obj.Spec.Address, m.FromDevice, dev, node, took)}
		} else {
			r.moveEvent = event{equinixv1.ReasonAssigned, fmt.Sprintf("assigned %s to device %s of node %s, %s after kube-vip named it",
				r.Obj.Spec.Address, dev, node, took)}
		}
		conditions.True(&st.Conditions, r.Obj.Generation, equinixv1.ElasticIPReady, equinixv1.ReasonAssigned, msg)
	} else {
		r.SetCondition(equinixv1.ElasticIPReady, metav1.ConditionTrue, equinixv1.ReasonAssigned, msg)
	}
	r.setPhase(equinixv1.ElasticIPPhaseAssigned)
	r.gauge(1)
	r.h.verify(r.Obj.Name, verification{node: node, device: dev, at: r.now})
	r.Requeue(r.h.settings.Resync)
}
