package fencing

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// A fenced node: its taint kept while it is NotReady, lifted once it is
// Ready and its server on, and with PowerOn its server switched back on
// once its volumes are detached.

// fenced keeps a fenced node: the taint goes once the node is Ready, and
// with PowerOn the server is switched on once its volumes are detached.
func (s *step) fenced(c *metav1.Condition) error {
	if !harvester.IsNodeReady(s.node) && !outOfServiceTainted(s.node) {
		return s.taintAgain(c)
	}
	if harvester.IsNodeReady(s.node) && !s.stillOff(c.Reason) {
		if err := s.f.setTaint(s.node.Name, false); err != nil {
			metrics.FenceActions.WithLabelValues("untaint", "failed").Inc()
			return err
		}
		metrics.FenceActions.WithLabelValues("untaint", "done").Inc()
		s.set(metav1.ConditionFalse, equinixv1.ReasonFenceLifted, fmt.Sprintf("node %s is Ready again: the out-of-service taint is removed", s.node.Name))
		return nil
	}
	if !s.f.settings.PowerOn || c.Reason != equinixv1.ReasonFenced || s.m == nil {
		return nil
	}
	return s.powerOn()
}

// stillOff says whether the BMC shows the server of a node that reports
// Ready still off: a Ready posted just before the power-off landed, which
// the node lifecycle controller will turn NotReady again. The fence stays
// (and counts against the bound) until the server is on. A BMC that
// cannot be read leaves it to the node's word.
func (s *step) stillOff(reason string) bool {
	if s.m == nil {
		return false
	}
	state, err := s.powerState()
	if err != nil || state != machine.PowerOff {
		return false
	}
	// The reason stays: a power-on sent is not sent again.
	msg := fmt.Sprintf("node %s reports Ready, but its server is off: the node stays tainted out-of-service until the server is on", s.node.Name)
	if !outOfServiceTainted(s.node) {
		// Harvester's node-down handling takes the taint off any node
		// that reports Ready; it goes back on once the node is NotReady.
		msg = fmt.Sprintf("node %s reports Ready, but its server is off: the node stays fenced until the server is on; its out-of-service "+
			"taint, which someone took off (Harvester does, for a node that reports Ready), is put back once the node is NotReady again", s.node.Name)
	}
	s.set(metav1.ConditionTrue, reason, msg)
	s.t.Requeue(heldRecheck)
	return true
}

// taintAgain puts the out-of-service taint back on a fenced node that is
// NotReady and lost it: Harvester's node-down handling removes it (by its
// key, whoever put it there) when a Ready is posted, such as a kubelet's
// last word written just before the power-off landed. The server was
// confirmed off and the fence stands, so the taint does too.
func (s *step) taintAgain(c *metav1.Condition) error {
	changed, err := s.f.changeTaint(s.node.Name, true)
	if err != nil {
		metrics.FenceActions.WithLabelValues("taint", "failed").Inc()
		return err
	}
	if !changed {
		// The cache had not seen the taint yet; the node has it.
		return nil
	}
	metrics.FenceActions.WithLabelValues("taint", "done").Inc()
	// The reason stays (a power-on sent is not sent again); the message
	// and an Event say what happened.
	msg := fmt.Sprintf("node %s is fenced and NotReady, but its out-of-service taint had been taken off (Harvester's node-down handling "+
		"does so when the node reports Ready): it is put back", s.node.Name)
	s.t.SetCondition(equinixv1.BMCFenced, metav1.ConditionTrue, c.Reason, msg)
	s.f.recorder.Event(s.node, corev1.EventTypeWarning, equinixv1.ReasonFenced, msg)
	return nil
}

// powerOn switches a fenced server on once its node lists no volume as
// attached any more: Kubernetes detached them, so the server cannot write
// to them when it boots. One command: the intent is stored before it.
func (s *step) powerOn() error {
	if n := attached(s.node); n > 0 {
		s.t.Requeue(heldRecheck)
		return nil
	}
	s.set(metav1.ConditionTrue, equinixv1.ReasonFencePowerOnSending, fmt.Sprintf(
		"node %s is fenced and its volumes are detached: switching its server on", s.node.Name))
	if err := s.t.Persist(); err != nil {
		return err
	}
	err := s.command(machine.ActionOn)
	result, msg := "done", "the BMC took the power-on"
	switch {
	case err == nil:
	case machine.MaybeApplied(err):
		result, msg = "unconfirmed", fmt.Sprintf("the answer to the power-on was lost (%s); it is not sent again", failure.Message(err))
	default:
		result, msg = "refused", fmt.Sprintf("the BMC refused the power-on (%s): switch the server on by hand", failure.Message(err))
	}
	metrics.FenceActions.WithLabelValues("power-on", result).Inc()
	s.set(metav1.ConditionTrue, equinixv1.ReasonFencePowerOnSent, fmt.Sprintf(
		"node %s stays fenced until it is Ready: %s", s.node.Name, msg))
	return nil
}
