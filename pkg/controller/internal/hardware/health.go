package hardware

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// signalHealth turns what the pass learnt of the machine's health into
// signals an operator can alert on: the node's hardware metrics and its
// HardwareHealthy condition. A machine whose provider reports no health
// (an Equinix Metal device) gives none; neither does a target without a
// node, whose series would have no node to name.
func (r *run) signalHealth() error {
	hr, ok := r.machine.(machine.HealthReporter)
	if !ok || r.node == nil {
		return nil
	}
	node, target, nodes := r.node.Name, r.Name(), r.s.healthNodes
	since := nodes.bind(target, node, r.now)
	hr.OnForget(func() { nodes.forget(target) })

	last, interval := hr.Schedule()
	if last.IsZero() {
		// Never polled yet: overdue counts from when polling began.
		last = since
	}
	metrics.HardwareLastPoll.WithLabelValues(node).Set(float64(last.Unix()))
	metrics.HardwarePollInterval.WithLabelValues(node).Set(interval.Seconds())

	link := hr.Link()
	if link.Tried {
		metrics.BMCReachable.WithLabelValues(node).Set(boolGauge(link.Reachable))
		metrics.BMCAuthenticated.WithLabelValues(node).Set(boolGauge(link.Authenticated))
	}
	h, polled := hr.PolledHealth()
	if polled {
		for _, s := range h.Subsystems {
			metrics.HardwareHealth.WithLabelValues(node, s.Subsystem).Set(healthGauge(s.State))
			metrics.HardwarePredictedFailures.WithLabelValues(node, s.Subsystem).Set(float64(s.Predicted))
		}
	}
	cond, ok := healthCondition(h, polled, link)
	if !ok {
		return nil
	}
	return r.setNodeCondition(cond)
}

// healthCondition is the HardwareHealthy condition a poll or a failed
// contact says; ok is false when the pass learnt nothing new (no poll was
// due, or nothing was tried), so the condition stays as it is.
func healthCondition(h machine.Health, polled bool, link machine.Link) (corev1.NodeCondition, bool) {
	if !polled {
		if !link.Tried || link.Problem == nil {
			return corev1.NodeCondition{}, false
		}
		reason := equinixv1.ReasonBMCError
		switch {
		case !link.Reachable:
			reason = equinixv1.ReasonBMCUnreachable
		case !link.Authenticated:
			reason = equinixv1.ReasonAuthenticationFailed
		}
		return corev1.NodeCondition{Type: equinixv1.NodeHardwareHealthy, Status: corev1.ConditionUnknown, Reason: reason,
			Message: "the BMC could not be read: " + failure.Message(link.Problem)}, true
	}
	var failing, fine, unreported []string
	critical, predicted := false, false
	for _, s := range h.Subsystems {
		switch s.State {
		case machine.HealthOK:
			fine = append(fine, s.Subsystem)
		case machine.HealthWarning, machine.HealthCritical:
			failing = append(failing, s.Subsystem+": "+s.Message)
			critical = critical || s.State == machine.HealthCritical
			predicted = predicted || s.Predicted > 0
		default:
			unreported = append(unreported, s.Subsystem)
		}
	}
	if len(failing) == 0 && len(fine) == 0 {
		// A BMC that reports no part says nothing of the hardware.
		return corev1.NodeCondition{Type: equinixv1.NodeHardwareHealthy, Status: corev1.ConditionUnknown, Reason: equinixv1.ReasonHardwareNotReported,
			Message: "the BMC reports the health of no part"}, true
	}
	if len(failing) == 0 {
		msg := "OK as the BMC reports: " + strings.Join(fine, ", ")
		if len(unreported) > 0 {
			msg += "; not reported: " + strings.Join(unreported, ", ")
		}
		return corev1.NodeCondition{Type: equinixv1.NodeHardwareHealthy, Status: corev1.ConditionTrue, Reason: equinixv1.ReasonHardwareOK, Message: msg}, true
	}
	reason := equinixv1.ReasonHardwareDegraded
	switch {
	case critical:
		reason = equinixv1.ReasonHardwareCritical
	case predicted:
		reason = equinixv1.ReasonFailurePredicted
	}
	return corev1.NodeCondition{Type: equinixv1.NodeHardwareHealthy, Status: corev1.ConditionFalse, Reason: reason,
		Message: strings.Join(failing, "; ")}, true
}

// setNodeCondition writes want on the Node when its status, reason or
// message differ from the Node's: a patch of that one condition of the
// status (Node conditions merge by type), so the kubelet's own stay
// untouched and a server at rest costs no write.
func (r *run) setNodeCondition(want corev1.NodeCondition) error {
	now := metav1.NewTime(r.now)
	want.LastHeartbeatTime, want.LastTransitionTime = now, now
	for _, c := range r.node.Status.Conditions {
		if c.Type != want.Type {
			continue
		}
		if c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message {
			return nil
		}
		if c.Status == want.Status {
			want.LastTransitionTime = c.LastTransitionTime
		}
	}
	raw, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{want}}})
	if err != nil {
		return err
	}
	updated, err := r.s.nodes.Patch(r.node.Name, types.StrategicMergePatchType, raw, "status")
	if err != nil {
		return fmt.Errorf("setting condition %s of node %s: %w", want.Type, r.node.Name, err)
	}
	r.s.written.Wrote(updated)
	r.node = updated
	return nil
}

func healthGauge(s machine.HealthState) float64 {
	switch s {
	case machine.HealthOK:
		return 0
	case machine.HealthWarning:
		return 2
	case machine.HealthCritical:
		return 3
	}
	return 1
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// healthNodes remembers which node each target's hardware series name,
// so that they go when the target goes or names another node, and since
// when.
type healthNodes struct {
	mu     sync.Mutex
	byName map[string]boundNode
}

type boundNode struct {
	node  string
	since time.Time
}

func newHealthNodes() *healthNodes { return &healthNodes{byName: map[string]boundNode{}} }

// bind notes that target's series name node, removes those of the node it
// named before, and returns since when it names node.
func (n *healthNodes) bind(target, node string, now time.Time) time.Time {
	n.mu.Lock()
	old, had := n.byName[target]
	if !had || old.node != node {
		n.byName[target] = boundNode{node: node, since: now}
	}
	since := n.byName[target].since
	n.mu.Unlock()
	if had && old.node != node {
		metrics.ForgetNode(old.node)
	}
	return since
}

// forget removes the series of target's node: target went.
func (n *healthNodes) forget(target string) {
	n.mu.Lock()
	b, had := n.byName[target]
	delete(n.byName, target)
	n.mu.Unlock()
	if had {
		metrics.ForgetNode(b.node)
	}
}

// ForgetTarget removes the hardware series of target's node (its object
// went) and those of node, its node if it had one the steps did not see.
func (s *Steps) ForgetTarget(target, node string) {
	s.healthNodes.forget(target)
	if node != "" {
		metrics.ForgetNode(node)
	}
}

// eventNode is the node an Event is about, "" while it is about the
// target (no node yet).
func eventNode(ev *corev1.Event) string {
	if ev.InvolvedObject.Kind == "Node" {
		return ev.InvolvedObject.Name
	}
	return ""
}
