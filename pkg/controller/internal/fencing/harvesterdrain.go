package fencing

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// Harvester's node-down handler (v1.7.1 to v1.8.2) writes a dead node in
// two steps: the drain taint (an update of the Node), then its condition
// Drained (an update of the Node's status, from the object the first
// returned, never retried). A write of the Node by anyone in between, the
// fence's taint or a hardware condition among them, makes the second fail
// with a conflict; the handler then finds the drain taint without the
// condition on every pass, dereferences the missing condition and the
// Harvester process dies, again after each restart, for as long as the
// node stays down. The out-of-service taint it was to put on never comes.
// The fence writes the condition Harvester meant to write, as it would
// have: Harvester's handler then goes on from there.

// drainedMissingFor is how long the condition may be missing beside the
// drain taint before it is written: Harvester's own write follows its
// taint within a second when nothing is in the way.
const drainedMissingFor = 5 * time.Second

// restoreHarvesterDrained writes Harvester's Drained condition on a node
// that has been left with Harvester's drain taint and no such condition
// for drainedMissingFor.
func (s *step) restoreHarvesterDrained() error {
	name := s.t.Name()
	if !harvesterDrainStuck(s.node) {
		s.f.forgetDrainStuck(name)
		return nil
	}
	since := s.f.drainStuckSince(name, s.now)
	if wait := since.Add(drainedMissingFor).Sub(s.now); wait > 0 {
		s.t.Requeue(wait)
		return nil
	}
	now := metav1.NewTime(s.now)
	cond := corev1.NodeCondition{Type: harvester.NodeConditionDrained, Status: corev1.ConditionFalse,
		Reason: harvester.DrainedReasonDraining, Message: harvester.DrainedMessage, LastHeartbeatTime: now, LastTransitionTime: now}
	raw, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{cond}}})
	if err != nil {
		return fmt.Errorf("condition %s of node %s: %w", harvester.NodeConditionDrained, s.node.Name, err)
	}
	patched, err := s.f.liveNodes.Nodes().Patch(s.f.ctx, s.node.Name, types.StrategicMergePatchType, raw, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("writing Harvester's condition %s on node %s: %w", harvester.NodeConditionDrained, s.node.Name, err)
	}
	s.f.nodeWrites.Wrote(patched)
	s.f.forgetDrainStuck(name)
	s.f.recorder.Event(s.node, corev1.EventTypeWarning, equinixv1.ReasonHarvesterDrainedRestored, fmt.Sprintf(
		"node %s has carried Harvester's %s taint without Harvester's condition %s for %s: Harvester's node-down handler, whose own write "+
			"of it did not land, fails on every pass until the node is Ready; the condition is written as Harvester writes it, "+
			"so that it goes on (its out-of-service taint follows vmMigrationTimeout later)",
		s.node.Name, harvester.TaintKubevirtDrain, harvester.NodeConditionDrained, s.now.Sub(since).Round(time.Second)))
	return nil
}

// harvesterDrainStuck says whether the node is in the state Harvester's
// handler cannot leave: silent (Ready Unknown), Harvester's drain taint on,
// its Drained condition missing.
func harvesterDrainStuck(node *corev1.Node) bool {
	ready := harvester.NodeReadyCondition(node)
	if ready == nil || ready.Status != corev1.ConditionUnknown {
		return false
	}
	drain := false
	for _, t := range node.Spec.Taints {
		drain = drain || t.Key == harvester.TaintKubevirtDrain
	}
	if !drain {
		return false
	}
	for _, c := range node.Status.Conditions {
		if c.Type == harvester.NodeConditionDrained {
			return false
		}
	}
	return true
}

// drainStuckSince is when this process first saw name's node stuck so.
func (f *Fencer) drainStuckSince(name string, now time.Time) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	since, ok := f.drainStuck[name]
	if !ok {
		f.drainStuck[name] = now
		return now
	}
	return since
}

func (f *Fencer) forgetDrainStuck(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.drainStuck, name)
}
