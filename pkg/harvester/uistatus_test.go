package harvester

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

func TestInstanceUIConditions(t *testing.T) {
	c := func(t, reason, msg string, s metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg}
	}
	for _, tc := range []struct {
		name                  string
		st                    equinixv1.InstanceStatus
		reconciling, stalled  metav1.ConditionStatus
		reason, messageSubstr string
	}{
		{name: "no status yet", st: equinixv1.InstanceStatus{}, reconciling: metav1.ConditionTrue, stalled: metav1.ConditionFalse,
			reason: equinixv1.ReasonInProgress, messageSubstr: "waiting for the server to be pending"},
		{name: "provisioning names the device's progress", reconciling: metav1.ConditionTrue, stalled: metav1.ConditionFalse,
			st:     equinixv1.InstanceStatus{Status: equinixv1.PhaseProvisioning, Conditions: []metav1.Condition{c(equinixv1.InstanceDeviceActive, "Provisioning", "device d is provisioning (40%)", metav1.ConditionFalse)}},
			reason: "Provisioning", messageSubstr: "(40%)"},
		{name: "failed without a reason on record", st: equinixv1.InstanceStatus{Status: equinixv1.PhaseFailed},
			reconciling: metav1.ConditionFalse, stalled: metav1.ConditionTrue, reason: equinixv1.ReasonServerFailed, messageSubstr: "its pool replaces it"},
		{name: "failed device", reconciling: metav1.ConditionFalse, stalled: metav1.ConditionTrue,
			st:     equinixv1.InstanceStatus{Status: equinixv1.PhaseFailed, Conditions: []metav1.Condition{c(equinixv1.InstanceDeviceActive, "ProvisionFailed", "could not provision", metav1.ConditionFalse)}},
			reason: "ProvisionFailed", messageSubstr: "could not provision"},
		{name: "the first problem in chain order wins", reconciling: metav1.ConditionFalse, stalled: metav1.ConditionTrue,
			st: equinixv1.InstanceStatus{Status: equinixv1.PhaseProvisioning, Conditions: []metav1.Condition{
				c(equinixv1.InstanceDeviceActive, "PoweredOff", "powered off", metav1.ConditionFalse),
				c(equinixv1.InstanceCredentialsReady, "CredentialsInvalid", "401", metav1.ConditionFalse)}},
			reason: "CredentialsInvalid", messageSubstr: "401"},
		{name: "managed", st: equinixv1.InstanceStatus{Status: equinixv1.PhaseManaged}, reconciling: metav1.ConditionFalse, stalled: metav1.ConditionFalse, reason: equinixv1.ReasonReconciled},
		{name: "unhealthy", st: equinixv1.InstanceStatus{Status: equinixv1.PhaseUnhealthy}, reconciling: metav1.ConditionFalse, stalled: metav1.ConditionFalse, reason: equinixv1.ReasonReconciled},
		{name: "deleting", st: equinixv1.InstanceStatus{Status: equinixv1.PhaseDeleting}, reconciling: metav1.ConditionFalse, stalled: metav1.ConditionFalse, reason: equinixv1.ReasonReconciled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, s := InstanceUIConditions(tc.st)
			assert.Equal(t, equinixv1.ConditionReconciling, r.Type)
			assert.Equal(t, equinixv1.ConditionStalled, s.Type)
			assert.Equal(t, tc.reconciling, r.Status)
			assert.Equal(t, tc.stalled, s.Status)
			got := r
			if s.Status == metav1.ConditionTrue {
				got = s
			}
			assert.Equal(t, tc.reason, got.Reason)
			assert.Contains(t, got.Message, tc.messageSubstr)
		})
	}
}

func TestPoolUIConditions(t *testing.T) {
	r, s := PoolUIConditions(equinixv1.InstancePoolStatus{Status: equinixv1.PoolPhaseScaling, Conditions: []metav1.Condition{
		{Type: equinixv1.PoolScalingUp, Status: metav1.ConditionTrue, Reason: "ScalingUp", Message: "1 of 3 servers ready"}}})
	assert.Equal(t, metav1.ConditionTrue, r.Status)
	assert.Equal(t, equinixv1.ReasonScalingUp, r.Reason)
	assert.Equal(t, "1 of 3 servers ready", r.Message)
	assert.Equal(t, metav1.ConditionFalse, s.Status)

	r, s = PoolUIConditions(equinixv1.InstancePoolStatus{Status: equinixv1.PoolPhaseReady})
	assert.Equal(t, metav1.ConditionFalse, r.Status)
	assert.Equal(t, metav1.ConditionFalse, s.Status)

	r, s = PoolUIConditions(equinixv1.InstancePoolStatus{Status: equinixv1.PoolPhaseFailed, Conditions: []metav1.Condition{
		{Type: equinixv1.PoolProvisioningFailed, Status: metav1.ConditionTrue, Reason: "TooManyFailures", Message: "3 in a row"}}})
	assert.Equal(t, metav1.ConditionFalse, r.Status)
	assert.Equal(t, metav1.ConditionTrue, s.Status)
	assert.Equal(t, "TooManyFailures", s.Reason)
	assert.Equal(t, "3 in a row", s.Message)
}
