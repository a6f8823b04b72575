package fencing

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	hardwarev1 "github.com/harvester/harvester-equinix-addon/pkg/apis/hardware/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

const (
	// heldRecheck paces a NotReady node a guard holds back: the guards
	// (other nodes' readiness, the bound) change without this node's
	// Inventory being told.
	heldRecheck = 30 * time.Second
	// offRecheck paces the reads of a server's power after the power-off
	// was sent; a BMC shows it within seconds.
	offRecheck = 10 * time.Second
	// offTimeout is how long a server may take to show the power-off
	// before the attempt is taken as failed.
	offTimeout = 5 * time.Minute
	// offRetry is the wait after a failed power-off before the next.
	offRetry = time.Minute
)

// Target is the pass fencing runs in: an Inventory's (package inventory).
type Target interface {
	Name() string
	SetCondition(condType string, status metav1.ConditionStatus, reason, message string)
	Requeue(d time.Duration)
	// Persist stores the status now: the intent before a command.
	Persist() error
	// Conditions are the working copy's conditions.
	Conditions() []metav1.Condition
	Hardware() *hardwarev1.HardwareStatus
}

// Step runs fencing for one Inventory's node (nil for a server without
// one) at now; m is the pass's machine, nil when the BMC cannot be used
// (no credentials). What it did is in t's Fenced condition and in Events
// on the node; only a failure of the cluster is returned.
func (f *Fencer) Step(t Target, m machine.Machine, node *corev1.Node, now time.Time) error {
	if f == nil {
		return nil
	}
	if node == nil {
		nodeGone(t)
		f.note(t.Name(), false)
		return nil
	}
	s := &step{f: f, t: t, m: m, node: node, now: now}
	err := s.run()
	f.note(t.Name(), fencing(t.Conditions()))
	return err
}

// UsesMachine reports whether Step, in a pass over node with the
// Inventory's conditions conds, may read or switch its server's power: the
// node is NotReady, or its fence is not lifted. A Ready node never fenced
// leaves the machine alone, so that pass need not reach it.
func (f *Fencer) UsesMachine(conds []metav1.Condition, node *corev1.Node) bool {
	if f == nil || node == nil {
		return false
	}
	c := conditions.Get(conds, equinixv1.BMCFenced)
	return !harvester.IsNodeReady(node) || c != nil && c.Status != metav1.ConditionFalse
}

// nodeGone ends the fence of a node that was deleted (a pool that
// replaced its server, a person who removed a dead host): the taint went
// with the Node, and a server without a node is not fenced. Its power stays
// as it is; nothing is sent.
func nodeGone(t Target) {
	if c := conditions.Get(t.Conditions(), equinixv1.BMCFenced); c != nil && c.Status != metav1.ConditionFalse {
		t.SetCondition(equinixv1.BMCFenced, metav1.ConditionFalse, equinixv1.ReasonFenceLifted, fmt.Sprintf(
			"node %s is gone, and its out-of-service taint with it; its server's power stays as it is", t.Name()))
	}
}

// Fencing says whether the fencer owns the power of an Inventory's server:
// its node is fenced, or a power-off was sent (or is about to be). Nothing
// else switches that server's power until the fence is lifted.
func Fencing(conds []metav1.Condition) bool { return fencing(conds) }

// step is one pass of fencing over one node.
type step struct {
	f    *Fencer
	t    Target
	m    machine.Machine
	node *corev1.Node
	now  time.Time
}

func (s *step) run() error {
	c := conditions.Get(s.t.Conditions(), equinixv1.BMCFenced)
	if c != nil {
		// A copy: the steps change the condition in place, and Persist
		// replaces the working copy.
		c = c.DeepCopy()
	}
	switch {
	case c != nil && c.Status == metav1.ConditionTrue:
		return s.fenced(c)
	case c != nil && c.Status == metav1.ConditionUnknown:
		// A power-off was sent (or was about to be): never again, only
		// its effect is read.
		return s.confirmOff(c)
	case harvester.IsNodeReady(s.node):
		if c != nil && c.Reason != equinixv1.ReasonFenceLifted && c.Reason != equinixv1.ReasonFenceNotNeeded {
			s.set(metav1.ConditionFalse, equinixv1.ReasonFenceNotNeeded, fmt.Sprintf("node %s is Ready", s.node.Name))
		}
		return nil
	}
	if c != nil && c.Reason == equinixv1.ReasonFencePowerOffFailed {
		if wait := c.LastTransitionTime.Add(offRetry).Sub(s.now); wait > 0 {
			s.t.Requeue(wait)
			return nil
		}
	}
	since, _ := harvester.UnhealthySince(s.node, s.now)
	if h := s.f.joining(s.node); h != nil {
		s.set(metav1.ConditionFalse, h.reason, fmt.Sprintf("node %s is NotReady since %s and not fenced: %s", s.node.Name, stamp(since), h.message))
		s.t.Requeue(heldRecheck)
		return nil
	}
	if end := since.Add(s.f.settings.GracePeriod); s.now.Before(end) {
		s.set(metav1.ConditionFalse, equinixv1.ReasonFenceGracePeriod, fmt.Sprintf(
			"node %s is NotReady since %s; its server is switched off and the node tainted out-of-service at %s unless it is Ready again",
			s.node.Name, stamp(since), stamp(end)))
		s.t.Requeue(end.Sub(s.now))
		return nil
	}
	h, err := s.f.guards(s.node)
	if err != nil {
		return err
	}
	if h == nil {
		h = s.bmcGuard()
	}
	if h == nil {
		h = s.f.reserve(s.t.Name())
	}
	if h != nil {
		s.set(metav1.ConditionFalse, h.reason, fmt.Sprintf("node %s is NotReady since %s and not fenced: %s", s.node.Name, stamp(since), h.message))
		s.t.Requeue(heldRecheck)
		return nil
	}
	return s.powerOff()
}

// bmcGuard holds a node whose BMC cannot be used: without a BMC that took
// the credentials, the server's power can be neither switched nor read.
func (s *step) bmcGuard() *held {
	conds := s.t.Conditions()
	switch {
	case s.m == nil || !conditions.IsTrue(conds, equinixv1.BMCCredentialsReady):
		return &held{equinixv1.ReasonFenceHeldBMC, "the Inventory's BMC credentials are not ready (condition CredentialsReady)"}
	case !conditions.IsTrue(conds, equinixv1.BMCAuthenticated):
		return &held{equinixv1.ReasonFenceHeldBMC, "the Inventory's BMC has not taken the credentials (condition Authenticated): " +
			"the server's power can be neither switched nor confirmed off"}
	}
	if la := s.t.Hardware().LastPowerAction; la.InFlight() {
		return &held{equinixv1.ReasonFenceHeldPowerAction, fmt.Sprintf("a %s asked for through Harvester is under way", la.Action)}
	}
	return nil
}

// powerOff switches the server off: a server already off is fenced as it
// is; otherwise the intent is stored, then the one command sent.
func (s *step) powerOff() error {
	state, err := s.m.PowerState(s.f.ctx)
	if err != nil {
		s.set(metav1.ConditionFalse, equinixv1.ReasonFenceHeldBMC, fmt.Sprintf("node %s is NotReady and not fenced: its server's power "+
			"cannot be read (%s); a server that cannot be confirmed off may still be writing to its volumes, so the node is not "+
			"tainted", s.node.Name, failure.Message(err)))
		s.t.Requeue(heldRecheck)
		return nil
	}
	if state == machine.PowerOff {
		metrics.FenceActions.WithLabelValues("power-off", "already").Inc()
		// The intent first, as for a power-off: a restart between the
		// taint and Fenced then finds the taint under it (confirmOff),
		// and the node counts as fenced until the taint is lifted.
		s.set(metav1.ConditionUnknown, equinixv1.ReasonFenceTainting, fmt.Sprintf(
			"node %s is NotReady past its grace period and its server is off already: tainting the node out-of-service", s.node.Name))
		if err := s.t.Persist(); err != nil {
			return err
		}
		return s.taint(fmt.Sprintf("the server of node %s was off already (nothing was sent)", s.node.Name))
	}
	// The cache may lag: the command goes out only after the node, read
	// from the API server, is still NotReady and not in maintenance mode.
	live, err := s.f.liveNodes.Nodes().Get(s.f.ctx, s.node.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading node %s: %w", s.node.Name, err)
	}
	if in, _ := inMaintenance(live); in || harvester.IsNodeReady(live) {
		s.t.Requeue(time.Second)
		return nil
	}
	s.set(metav1.ConditionUnknown, equinixv1.ReasonFencePowerOffSending, fmt.Sprintf(
		"node %s is NotReady past its grace period and its server is %s: sending the power-off", s.node.Name, state))
	if err := s.t.Persist(); err != nil {
		return err
	}
	err = s.m.Power(s.f.ctx, machine.ActionOff)
	switch {
	case err == nil:
		metrics.FenceActions.WithLabelValues("power-off", "done").Inc()
		s.set(metav1.ConditionUnknown, equinixv1.ReasonFencePowerOffSent, fmt.Sprintf(
			"the BMC took the power-off of node %s's server; the node is tainted once the server shows off", s.node.Name))
	case machine.MaybeApplied(err):
		metrics.FenceActions.WithLabelValues("power-off", "unconfirmed").Inc()
		s.set(metav1.ConditionUnknown, equinixv1.ReasonFencePowerOffSent, fmt.Sprintf(
			"the answer to the power-off of node %s's server was lost (%s); it is not sent again: the node is tainted once the "+
				"server shows off", s.node.Name, failure.Message(err)))
	default:
		metrics.FenceActions.WithLabelValues("power-off", "refused").Inc()
		s.set(metav1.ConditionFalse, equinixv1.ReasonFencePowerOffFailed, fmt.Sprintf(
			"the BMC refused the power-off of node %s's server (%s); nothing was carried out and the node is not tainted; "+
				"tried again in %s", s.node.Name, failure.Message(err), offRetry))
		s.t.Requeue(offRetry)
		return nil
	}
	s.t.Requeue(offRecheck)
	return nil
}

// confirmOff reads the power after a power-off was sent, and taints the
// node once the server shows off.
func (s *step) confirmOff(c *metav1.Condition) error {
	if carriesTaint(s.node) {
		// The server showed off and the taint went on, but the process
		// stopped before it stored Fenced: the node is fenced, and counts
		// against the bound until the taint is lifted as any other's.
		s.t.Requeue(time.Second)
		return s.taint(fmt.Sprintf("the server of node %s was confirmed off before a restart", s.node.Name))
	}
	if s.m == nil {
		s.t.Requeue(offRecheck)
		return nil
	}
	state, err := s.m.PowerState(s.f.ctx)
	switch {
	case err != nil:
		s.set(metav1.ConditionUnknown, c.Reason, fmt.Sprintf("the power-off of node %s's server was sent; its power cannot be "+
			"read now (%s): the node is tainted once the BMC shows it off", s.node.Name, failure.Message(err)))
	case state == machine.PowerOff:
		return s.taint(fmt.Sprintf("the server of node %s is off", s.node.Name))
	case state == machine.PowerOn && harvester.IsNodeReady(s.node):
		// The node came back before the power-off showed: it was never
		// carried out (a restart between the intent and the command), and
		// is not sent now.
		s.set(metav1.ConditionFalse, equinixv1.ReasonFenceNotNeeded, fmt.Sprintf(
			"node %s is Ready again and its server on: the power-off never showed, and nothing more is sent", s.node.Name))
		return nil
	case s.now.Sub(c.LastTransitionTime.Time) > offTimeout:
		metrics.FenceActions.WithLabelValues("power-off", "failed").Inc()
		s.set(metav1.ConditionFalse, equinixv1.ReasonFencePowerOffFailed, fmt.Sprintf(
			"the server of node %s is still %s %s after the power-off was sent; the node is not tainted; tried again in %s",
			s.node.Name, state, s.now.Sub(c.LastTransitionTime.Time).Round(time.Second), offRetry))
		s.t.Requeue(offRetry)
		return nil
	}
	s.t.Requeue(offRecheck)
	return nil
}

// taint puts the out-of-service taint on the node of a server confirmed
// off; the node is fenced then.
func (s *step) taint(why string) error {
	if err := s.f.setTaint(s.node.Name, true); err != nil {
		metrics.FenceActions.WithLabelValues("taint", "failed").Inc()
		return err
	}
	metrics.FenceActions.WithLabelValues("taint", "done").Inc()
	how := "a person switches it on again"
	if s.f.settings.PowerOn {
		how = "the addon switches it on again once its volumes are detached"
	}
	s.set(metav1.ConditionTrue, equinixv1.ReasonFenced, fmt.Sprintf("%s; node %s is tainted %s=%s:NoExecute, so its volumes are released "+
		"and its VMs start on other hosts; %s, and the taint goes when the node is Ready", why, s.node.Name,
		corev1.TaintNodeOutOfService, equinixv1.TaintOutOfServiceValue, how))
	return nil
}

// fenced keeps a fenced node: the taint goes once the node is Ready, and
// with PowerOn the server is switched on once its volumes are detached.
func (s *step) fenced(c *metav1.Condition) error {
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
	state, err := s.m.PowerState(s.f.ctx)
	if err != nil || state != machine.PowerOff {
		return false
	}
	// The reason stays: a power-on sent is not sent again.
	s.set(metav1.ConditionTrue, reason, fmt.Sprintf("node %s reports Ready, but its server is off: the node stays tainted "+
		"out-of-service until the server is on", s.node.Name))
	s.t.Requeue(heldRecheck)
	return true
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
	err := s.m.Power(s.f.ctx, machine.ActionOn)
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

// set records a step: the Inventory's condition, and an Event on the node
// when the step is news.
func (s *step) set(status metav1.ConditionStatus, reason, message string) {
	// Copied: the condition is changed in place.
	var old metav1.Condition
	if c := conditions.Get(s.t.Conditions(), equinixv1.BMCFenced); c != nil {
		old = *c
	}
	s.t.SetCondition(equinixv1.BMCFenced, status, reason, message)
	if old.Reason != reason || old.Status != status {
		s.f.recorder.Event(s.node, equinixv1.EventType(reason), reason, message)
	}
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
