package metalsim

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

func (s *Simulator) createVlanBatch(c *call) (reply, error) {
	p, err := c.mutablePortLocked(false)
	if err != nil {
		return reply{}, err
	}
	var in metalv1.PortVlanAssignmentBatchCreateInput
	if err := c.decode(&in); err != nil {
		return reply{}, err
	}
	if len(in.VlanAssignments) == 0 {
		return reply{}, errInvalid("vlan_assignments must not be empty")
	}
	for _, b := range p.batches {
		if !batchDone(b) {
			return reply{}, errConflict("Port %s already has a VLAN assignment batch in progress", p.name)
		}
	}
	id := s.ids.uuid()
	b := &vlanBatch{port: p, obj: metalv1.PortVlanAssignmentBatch{
		Id:        ptr(id),
		State:     ptr(metalv1.PORTVLANASSIGNMENTBATCHSTATE_QUEUED),
		Quantity:  ptr(int32(len(in.VlanAssignments))),
		CreatedAt: ptr(c.now),
		UpdatedAt: ptr(c.now),
		Port:      &metalv1.Port{Id: ptr(p.id), Href: ptr(portHref(p.id))},
		Project:   &metalv1.Href{Href: projectHref(p.dev.project.id)},
	}}
	for _, a := range in.VlanAssignments {
		if a.GetVlan() == "" {
			return reply{}, errInvalid("Every VLAN assignment needs a vlan")
		}
		item := batchItem{
			ref:    a.GetVlan(),
			assign: a.GetState() != metalv1.PORTVLANASSIGNMENTBATCHVLANASSIGNMENTSINNERSTATE_UNASSIGNED,
			native: a.GetNative(),
		}
		b.items = append(b.items, item)
		b.obj.VlanAssignments = append(b.obj.VlanAssignments, s.batchAssignmentLocked(p.dev, item))
	}
	s.batches[id] = b
	p.batches = append(p.batches, b)
	s.scheduleBatchLocked(b, c.now)
	return jsonReply(201, b.obj)
}

func batchDone(b *vlanBatch) bool {
	st := b.obj.GetState()
	return st == metalv1.PORTVLANASSIGNMENTBATCHSTATE_COMPLETED || st == metalv1.PORTVLANASSIGNMENTBATCHSTATE_FAILED
}

func (s *Simulator) batchAssignmentLocked(d *device, item batchItem) metalv1.PortVlanAssignmentBatchVlanAssignmentsInner {
	state := metalv1.PORTVLANASSIGNMENTBATCHVLANASSIGNMENTSINNERSTATE_ASSIGNED
	if !item.assign {
		state = metalv1.PORTVLANASSIGNMENTBATCHVLANASSIGNMENTSINNERSTATE_UNASSIGNED
	}
	out := metalv1.PortVlanAssignmentBatchVlanAssignmentsInner{State: ptr(state), Native: ptr(item.native)}
	if v, err := s.resolveVLANLocked(d, item.ref); err == nil {
		out.Id = ptr(v.id())
		out.Vlan = ptr(v.vxlan())
	} else if n, err := strconv.Atoi(item.ref); err == nil {
		out.Vlan = ptr(int32(n))
	}
	return out
}

// scheduleBatchLocked moves a batch to in_progress after half of
// BatchCompletion and applies it at the end, collecting every failure.
func (s *Simulator) scheduleBatchLocked(b *vlanBatch, now time.Time) {
	half := s.timings.BatchCompletion / 2
	s.scheduleLocked(now, half, func(at time.Time) {
		if b.port.dev.gone {
			return
		}
		b.obj.State = ptr(metalv1.PORTVLANASSIGNMENTBATCHSTATE_IN_PROGRESS)
		b.obj.UpdatedAt = ptr(at)
	})
	s.scheduleLocked(now, s.timings.BatchCompletion, func(at time.Time) {
		if b.port.dev.gone {
			return
		}
		var errs []string
		for _, item := range b.items {
			if err := s.applyBatchItemLocked(b.port, item, at); err != nil {
				errs = append(errs, fmt.Sprintf("vlan %s: %s", item.ref, messageOf(err)))
			}
		}
		b.obj.State = ptr(metalv1.PORTVLANASSIGNMENTBATCHSTATE_COMPLETED)
		if len(errs) > 0 {
			b.obj.State = ptr(metalv1.PORTVLANASSIGNMENTBATCHSTATE_FAILED)
			b.obj.ErrorMessages = errs
		}
		b.obj.UpdatedAt = ptr(at)
	})
}

func (s *Simulator) applyBatchItemLocked(p *port, item batchItem, at time.Time) error {
	v, err := s.resolveVLANLocked(p.dev, item.ref)
	if err != nil {
		return err
	}
	if !item.assign {
		return s.unassignVLANLocked(p, v, at)
	}
	if err := s.assignVLANLocked(p, v, at); err != nil {
		return err
	}
	if item.native {
		return s.setNativeLocked(p, v, at)
	}
	return nil
}

func messageOf(err error) string {
	var ae *apiError
	if errors.As(err, &ae) && len(ae.msgs) > 0 {
		return ae.msgs[0]
	}
	return err.Error()
}

func (s *Simulator) findVlanBatches(c *call) (reply, error) {
	p, err := c.portLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	list := metalv1.PortVlanAssignmentBatchList{Batches: []metalv1.PortVlanAssignmentBatch{}}
	for _, b := range p.batches {
		list.Batches = append(list.Batches, b.obj)
	}
	return jsonReply(200, list)
}

func (s *Simulator) findVlanBatch(c *call) (reply, error) {
	p, err := c.portLocked(c.pathValue("id"))
	if err != nil {
		return reply{}, err
	}
	b, ok := s.batches[c.pathValue("batch_id")]
	if !ok || b.port != p {
		return reply{}, errNotFound()
	}
	return jsonReply(200, b.obj)
}
