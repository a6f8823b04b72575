package instance

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// TrackNode follows the Node the server registers as: the chain's step,
// which a provider's may run before a call (see provision.Chain).
func (h *Handler) TrackNode(p *provision.Pass) error {
	r := &run{Pass: p, h: h}
	name := r.Obj.NodeName()
	node, err := r.h.nodes.Cache().Get(name)
	if apierrors.IsNotFound(err) {
		r.nodeMissing(name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading node %s: %w", name, err)
	}
	if !common.OwnedNode(node, r.Obj) {
		r.SetCondition(equinixv1.InstanceNodeJoined, metav1.ConditionFalse, equinixv1.ReasonNodeNameTaken,
			fmt.Sprintf("node %s exists but does not carry label %s=%s, so it is not this server's; the addon leaves it alone",
				node.Name, equinixv1.LabelInstance, r.Obj.Name))
		r.Poll()
		return nil
	}
	st := &r.Obj.Status
	st.NodeName = node.Name
	st.Address = harvester.NodeInternalIP(node)
	if st.NodeRegisteredAt == nil {
		st.NodeRegisteredAt = r.NowTime()
		if r.h.provider.Traits().BootSteps {
			metrics.MarkBootStep(r.Obj.Name, metrics.BootStepNodeRegistered, st.NodeRegisteredAt.Time)
			metrics.ObserveBootPhase(metrics.BootPhaseInstall,
				metrics.BootStepTime(r.Obj.Name, metrics.BootStepConfigServed, timeOf(st.InstallConfigServedAt)), r.Now())
		}
	}
	r.SetCondition(equinixv1.InstanceNodeJoined, metav1.ConditionTrue, equinixv1.ReasonNodeJoined,
		fmt.Sprintf("server joined the cluster as node %s", node.Name))
	ready := harvester.NodeReadyCondition(node)
	if ready != nil && ready.Status == corev1.ConditionTrue {
		r.nodeReady(node)
		return nil
	}
	r.nodeNotReady(node, ready)
	return nil
}

func (r *run) nodeReady(node *corev1.Node) {
	st := &r.Obj.Status
	if st.JoinedAt == nil {
		st.JoinedAt = r.NowTime()
		if r.h.provider.Traits().BootSteps {
			metrics.ObserveBootPhase(metrics.BootPhaseNodeReady,
				metrics.BootStepTime(r.Obj.Name, metrics.BootStepNodeRegistered, timeOf(st.NodeRegisteredAt)), r.Now())
			metrics.ObserveBootPhase(metrics.BootPhaseClaimToReady,
				metrics.BootStepTime(r.Obj.Name, metrics.BootStepClaimed, timeOf(st.DeviceCreatedAt)), r.Now())
			metrics.ForgetBootSteps(r.Obj.Name)
		}
		r.SetCondition(equinixv1.InstanceInstalling, metav1.ConditionFalse, equinixv1.ReasonInstalled,
			fmt.Sprintf("Harvester is installed and node %s is Ready", node.Name))
	}
	st.UnhealthySince = nil
	st.WaitingFor = ""
	r.SetPhase(equinixv1.PhaseManaged)
	r.SetCondition(equinixv1.InstanceReady, metav1.ConditionTrue, equinixv1.ReasonNodeReady,
		fmt.Sprintf("node %s is Ready", node.Name))
}

// nodeNotReady starts the unhealthy clock at the Ready condition's last
// transition, never at the last heartbeat: a kubelet that reports Ready=False
// keeps heartbeating, which would restart the clock forever.
func (r *run) nodeNotReady(node *corev1.Node, ready *corev1.NodeCondition) {
	st := &r.Obj.Status
	since := node.CreationTimestamp
	why := "has no Ready condition yet"
	if ready != nil {
		since = ready.LastTransitionTime
		why = fmt.Sprintf("is %s: %s", readyWord(ready.Status), ready.Message)
		if ready.Reason != "" && ready.Message == "" {
			why = fmt.Sprintf("is %s (%s)", readyWord(ready.Status), ready.Reason)
		}
	}
	if st.JoinedAt == nil {
		r.SetPhase(equinixv1.PhaseJoining)
		st.WaitingFor = "node Ready"
		r.SetCondition(equinixv1.InstanceReady, metav1.ConditionFalse, equinixv1.ReasonNodeNotReadyYet, fmt.Sprintf("node %s %s", node.Name, why))
		return
	}
	if r.poweredOnRequest(node.Name, why) || r.maintained(node, why) {
		return
	}
	st.UnhealthySince = &since
	r.SetPhase(equinixv1.PhaseUnhealthy)
	r.SetCondition(equinixv1.InstanceReady, metav1.ConditionFalse, equinixv1.ReasonNodeNotReady,
		fmt.Sprintf("node %s %s (since %s)", node.Name, why, since.UTC().Format(time.RFC3339)))
}

// poweredOnRequest reports a node that is not Ready because its server was
// switched off, or is restarting, on request (spec.powerState,
// spec.rebootRequestedAt): not unhealthy, so the pool neither replaces it
// nor counts it as failed. A restart has the pool's startup timeout to
// bring the node back.
func (r *run) poweredOnRequest(node, why string) bool {
	st := &r.Obj.Status
	switch {
	case r.Obj.OffOnRequest():
		st.UnhealthySince = nil
		r.SetPhase(equinixv1.PhaseOff)
		r.SetCondition(equinixv1.InstanceReady, metav1.ConditionFalse, equinixv1.ReasonPoweredOffOnRequest,
			fmt.Sprintf("node %s %s: its server is switched off on request (spec.powerState: off)", node, why))
		return true
	case r.Obj.RestartingOnRequest(metav1.NewTime(r.Now()), metav1.Duration{Duration: r.startupTimeout()}):
		st.UnhealthySince = nil
		r.SetPhase(equinixv1.PhaseUnhealthy)
		r.SetCondition(equinixv1.InstanceReady, metav1.ConditionFalse, equinixv1.ReasonRestartingOnRequest,
			fmt.Sprintf("node %s %s: its server was switched on or rebooted on request and has until %s to come back",
				node, why, r.Obj.Status.LastPowerAction.Requested.Add(r.startupTimeout()).UTC().Format(time.RFC3339)))
		r.Poll()
		return true
	}
	return false
}

// maintained reports the node of a server people own that is not Ready
// while in Harvester maintenance mode: a person is at work on it, and may
// have switched its server off through Harvester's power actions (its
// Inventory takes them only in maintenance mode). It is not unhealthy, so
// the pool neither power-cycles nor replaces it until maintenance ends.
func (r *run) maintained(node *corev1.Node, why string) bool {
	if !r.h.provider.Traits().PowerActions {
		return false
	}
	if in, _ := harvester.PowerActionsAllowed(node); !in {
		return false
	}
	r.Obj.Status.UnhealthySince = nil
	r.SetPhase(equinixv1.PhaseOff)
	r.SetCondition(equinixv1.InstanceReady, metav1.ConditionFalse, equinixv1.ReasonNodeInMaintenance, fmt.Sprintf(
		"node %s %s while in Harvester maintenance mode: its server's power is a person's (Harvester's power actions), "+
			"so the pool neither power-cycles nor replaces it until maintenance ends", node.Name, why))
	return true
}

func readyWord(s corev1.ConditionStatus) string {
	if s == corev1.ConditionUnknown {
		return "unreachable (Ready=Unknown)"
	}
	return "not Ready"
}

func (r *run) nodeMissing(name string) {
	st := &r.Obj.Status
	if st.JoinedAt != nil {
		// The Node object was deleted after the server joined: as unhealthy as it
		// gets, measured from when we noticed.
		if st.UnhealthySince == nil || st.Status != equinixv1.PhaseUnhealthy {
			st.UnhealthySince = r.NowTime()
		}
		r.SetPhase(equinixv1.PhaseUnhealthy)
		r.SetCondition(equinixv1.InstanceReady, metav1.ConditionFalse, equinixv1.ReasonNodeGone,
			fmt.Sprintf("node %s no longer exists", name))
		return
	}
	if !r.h.provider.Traits().BootSteps {
		// A provider that does not see the boot's steps cannot tell the
		// install from the join.
		r.SetPhase(equinixv1.PhaseJoining)
	}
	r.SetCondition(equinixv1.InstanceNodeJoined, metav1.ConditionFalse, equinixv1.ReasonWaiting,
		fmt.Sprintf("waiting for the installer to finish and node %s to register", name))
	// The Node watch brings us back when it registers; polling the device meanwhile
	// notices an install that fails or a device that disappears.
	r.Requeue(2 * r.PollInterval())
}

// timeOf is t's time, zero for none.
func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}
