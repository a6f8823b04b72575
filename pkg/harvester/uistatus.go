package harvester

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
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
	equinixv1.InstanceCredentialsReady, equinixv1.InstanceDeviceCreated, equinixv1.InstanceDeviceActive,
	equinixv1.InstanceNetworkConfigured, equinixv1.InstanceInstallConfigured, equinixv1.InstanceNodeJoined,
}

// phaseCondition is the condition whose message says what a phase waits for.
var phaseCondition = map[string][]string{
	equinixv1.PhasePending:      {equinixv1.InstanceDeviceCreated, equinixv1.InstanceInstallConfigured},
	equinixv1.PhaseProvisioning: {equinixv1.InstanceDeviceActive, equinixv1.InstanceDeviceCreated, equinixv1.InstanceInstalling},
	equinixv1.PhaseNetworking:   {equinixv1.InstanceNetworkConfigured},
	equinixv1.PhaseInstalling:   {equinixv1.InstanceInstalling, equinixv1.InstanceInstallConfigured, equinixv1.InstanceDeviceActive},
	equinixv1.PhaseJoining:      {equinixv1.InstanceReady, equinixv1.InstanceNodeJoined, equinixv1.InstanceInstalling},
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
	return uiCondition(equinixv1.ConditionReconciling, false, equinixv1.ReasonReconciled, ""),
		uiCondition(equinixv1.ConditionStalled, false, equinixv1.ReasonNotStalled, "")
}

// firstAttention returns the first False condition, in order, whose reason
// needs a person.
func firstAttention(conds []metav1.Condition, order []string) *metav1.Condition {
	for _, t := range order {
		if c := find(conds, t); c != nil && c.Status == metav1.ConditionFalse && equinixv1.Stalls(c.Reason) {
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
			return uiCondition(equinixv1.ConditionReconciling, true, c.Reason, c.Message)
		}
	}
	return uiCondition(equinixv1.ConditionReconciling, true, equinixv1.ReasonInProgress, fallback)
}

// InstanceUIConditions returns the Reconciling and Stalled conditions an
// Instance's status implies. Stalled is True for a failed server and for one
// held by a problem a person must fix; Reconciling is True while a healthy
// server is on its way to managed. A managed, unhealthy or deleting server has
// both False: its Ready and Deleting conditions already say what the UI shows.
func InstanceUIConditions(st equinixv1.InstanceStatus) (reconciling, stalled metav1.Condition) {
	reconciling, stalled = settled()
	problem := firstAttention(st.Conditions, instanceAttention)
	switch {
	case problem != nil:
		return reconciling, uiCondition(equinixv1.ConditionStalled, true, problem.Reason, problem.Message)
	case st.Status == equinixv1.PhaseFailed:
		return reconciling, uiCondition(equinixv1.ConditionStalled, true, equinixv1.ReasonServerFailed, "the server failed; its pool replaces it")
	}
	phase := st.Status
	if phase == "" {
		phase = equinixv1.PhasePending
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
func PoolUIConditions(st equinixv1.InstancePoolStatus) (reconciling, stalled metav1.Condition) {
	reconciling, stalled = settled()
	if c := find(st.Conditions, equinixv1.PoolProvisioningFailed); c != nil && c.Status == metav1.ConditionTrue {
		return reconciling, uiCondition(equinixv1.ConditionStalled, true, c.Reason, c.Message)
	}
	for _, t := range []string{equinixv1.PoolCredentialsReady, equinixv1.PoolJoinInfoReady} {
		if c := find(st.Conditions, t); c != nil && c.Status == metav1.ConditionFalse {
			return reconciling, uiCondition(equinixv1.ConditionStalled, true, c.Reason, c.Message)
		}
	}
	switch st.Status {
	case equinixv1.PoolPhaseProvisioning, equinixv1.PoolPhaseScaling, equinixv1.PoolPhasePending, "":
	default:
		return reconciling, stalled
	}
	var types []string
	for _, t := range []string{equinixv1.PoolScalingUp, equinixv1.PoolScalingDown} {
		if c := find(st.Conditions, t); c != nil && c.Status == metav1.ConditionTrue {
			types = append(types, t)
		}
	}
	return progress(st.Conditions, append(types, equinixv1.PoolReady), "creating the pool's servers"), stalled
}
