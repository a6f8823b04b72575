package harvester

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// The Harvester UI shows a custom resource's state badge from wrangler's
// summary of its conditions. That summary knows none of the addon's own
// condition types, but it reads the two generic ones kstatus also reads:
// Reconciling=True shows the object as in progress, Stalled=True as an error
// carrying the condition's message. Without them a server that is
// provisioning, or one that failed, shows as active. InstanceUIConditions and
// PoolUIConditions derive both from what a status already says; the
// controller stores them on every status write.

// instanceAttention is the order in which an Instance's conditions are read for
// a problem: the provisioning chain's order.
var instanceAttention = []string{
	v1.InstanceCredentialsReady, v1.InstanceDeviceCreated, v1.InstanceDeviceActive,
	v1.InstanceNetworkConfigured, v1.InstanceInstallConfigured, v1.InstanceNodeJoined,
}

// phaseCondition is the condition whose message says what a phase waits for.
var phaseCondition = map[string][]string{
	v1.PhasePending:      {v1.InstanceDeviceCreated, v1.InstanceInstallConfigured},
	v1.PhaseProvisioning: {v1.InstanceDeviceActive, v1.InstanceDeviceCreated},
	v1.PhaseNetworking:   {v1.InstanceNetworkConfigured},
	v1.PhaseInstalling:   {v1.InstanceInstalling, v1.InstanceInstallConfigured, v1.InstanceDeviceActive},
	v1.PhaseJoining:      {v1.InstanceReady, v1.InstanceNodeJoined, v1.InstanceInstalling},
}

func find(conds []metav1.Condition, condType string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == condType {
			return &conds[i]
		}
	}
	return nil
}

func uiCondition(condType string, status bool, reason, message string) metav1.Condition {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: condType, Status: s, Reason: reason, Message: message}
}

func settled() (reconciling, stalled metav1.Condition) {
	return uiCondition(v1.ConditionReconciling, false, v1.ReasonReconciled, ""),
		uiCondition(v1.ConditionStalled, false, v1.ReasonNotStalled, "")
}

// firstAttention returns the first False condition, in order, whose reason
// needs a person.
func firstAttention(conds []metav1.Condition, order []string) *metav1.Condition {
	for _, t := range order {
		if c := find(conds, t); c != nil && c.Status == metav1.ConditionFalse && v1.Stalls(c.Reason) {
			return c
		}
	}
	return nil
}

// progress is Reconciling=True with the message (and reason) of the first of
// types that has one.
func progress(conds []metav1.Condition, types []string, fallback string) metav1.Condition {
	for _, t := range types {
		if c := find(conds, t); c != nil && c.Message != "" {
			return uiCondition(v1.ConditionReconciling, true, c.Reason, c.Message)
		}
	}
	return uiCondition(v1.ConditionReconciling, true, v1.ReasonInProgress, fallback)
}

// InstanceUIConditions returns the Reconciling and Stalled conditions an
// Instance's status implies. Stalled is True for a failed server and for one
// held by a problem a person must fix; Reconciling is True while a healthy
// server is on its way to managed. A managed, unhealthy or deleting server has
// both False: its Ready and Deleting conditions already say what the UI shows.
func InstanceUIConditions(st v1.InstanceStatus) (reconciling, stalled metav1.Condition) {
	reconciling, stalled = settled()
	problem := firstAttention(st.Conditions, instanceAttention)
	switch {
	case problem != nil:
		return reconciling, uiCondition(v1.ConditionStalled, true, problem.Reason, problem.Message)
	case st.Status == v1.PhaseFailed:
		return reconciling, uiCondition(v1.ConditionStalled, true, v1.ReasonServerFailed, "the server failed; its pool replaces it")
	}
	phase := st.Status
	if phase == "" {
		phase = v1.PhasePending
	}
	types, progressing := phaseCondition[phase]
	if !progressing {
		return reconciling, stalled
	}
	return progress(st.Conditions, types, "waiting for the server to be "+phase), stalled
}

// PoolUIConditions returns the Reconciling and Stalled conditions an
// InstancePool's status implies. Stalled is True when the pool stopped after
// too many failures or lacks credentials or join information; Reconciling is
// True while it provisions or scales.
func PoolUIConditions(st v1.InstancePoolStatus) (reconciling, stalled metav1.Condition) {
	reconciling, stalled = settled()
	if c := find(st.Conditions, v1.PoolProvisioningFailed); c != nil && c.Status == metav1.ConditionTrue {
		return reconciling, uiCondition(v1.ConditionStalled, true, c.Reason, c.Message)
	}
	for _, t := range []string{v1.PoolCredentialsReady, v1.PoolJoinInfoReady} {
		if c := find(st.Conditions, t); c != nil && c.Status == metav1.ConditionFalse {
			return reconciling, uiCondition(v1.ConditionStalled, true, c.Reason, c.Message)
		}
	}
	switch st.Status {
	case v1.PoolPhaseProvisioning, v1.PoolPhaseScaling, v1.PoolPhasePending, "":
	default:
		return reconciling, stalled
	}
	var types []string
	for _, t := range []string{v1.PoolScalingUp, v1.PoolScalingDown} {
		if c := find(st.Conditions, t); c != nil && c.Status == metav1.ConditionTrue {
			types = append(types, t)
		}
	}
	return progress(st.Conditions, append(types, v1.PoolReady), "creating the pool's servers"), stalled
}
