package reconcile

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// Every healthy two-phase install passes through False conditions; only the
// ones that need a person are Warnings (a Warning on every install would
// teach operators to ignore them).
func TestSetConditionEventType(t *testing.T) {
	cases := []struct {
		condType string
		status   metav1.ConditionStatus
		reason   string
		want     string
	}{
		{v1.InstanceDeviceActive, metav1.ConditionFalse, v1.ReasonProvisioning, "Normal"},
		{v1.InstanceDeviceActive, metav1.ConditionFalse, v1.ReasonReinstalling, "Normal"},
		{v1.InstanceNodeJoined, metav1.ConditionFalse, v1.ReasonWaiting, "Normal"},
		{v1.InstanceReady, metav1.ConditionFalse, v1.ReasonNodeNotReadyYet, "Normal"},
		{v1.InstanceInstalling, metav1.ConditionFalse, v1.ReasonInstalled, "Normal"},
		{v1.InstanceNetworkConfigured, metav1.ConditionFalse, v1.ReasonConverging, "Normal"},
		{v1.InstanceDeviceActive, metav1.ConditionTrue, v1.ReasonDeviceActive, "Normal"},
		{v1.PoolReady, metav1.ConditionFalse, v1.ReasonNotAllReady, "Normal"},
		{v1.InstanceDeviceActive, metav1.ConditionFalse, v1.ReasonProvisionFailed, "Warning"},
		{v1.InstanceCredentialsReady, metav1.ConditionFalse, v1.ReasonCredentialsInvalid, "Warning"},
		{v1.InstanceCredentialsReady, metav1.ConditionFalse, v1.ReasonSecretNotFound, "Warning"},
		{v1.InstanceCredentialsReady, metav1.ConditionFalse, v1.ReasonProjectMismatch, "Warning"},
		{v1.InstanceReady, metav1.ConditionFalse, v1.ReasonNodeNotReady, "Warning"},
		{v1.InstanceDeviceActive, metav1.ConditionFalse, v1.ReasonDeviceGone, "Warning"},
		{v1.PoolRemediationBlocked, metav1.ConditionTrue, v1.ReasonQuorumGuard, "Warning"},
		{v1.PoolCredentialsReady, metav1.ConditionFalse, v1.ReasonCredentialsMissing, "Warning"},
	}
	for _, tc := range cases {
		t.Run(tc.condType+"/"+tc.reason, func(t *testing.T) {
			rec := record.NewFakeRecorder(1)
			c := NewConditionRecorder(rec)
			var conds []metav1.Condition
			c.Set(&v1.Instance{}, &conds, 1, tc.condType, tc.status, tc.reason, "message")
			if assert.Len(t, rec.Events, 1) {
				assert.Equal(t, tc.want+" "+tc.reason+" message", <-rec.Events)
			}
		})
	}
}

// An Event goes out on a transition, and on a warning's new message; a new
// message of progress (a percentage) updates the condition quietly.
func TestSetConditionEventsOnlyWhenNews(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	c := NewConditionRecorder(rec)
	var conds []metav1.Condition
	obj := &v1.Instance{}
	set := func(status metav1.ConditionStatus, reason, msg string) {
		c.Set(obj, &conds, 1, v1.InstanceDeviceActive, status, reason, msg)
	}
	set(metav1.ConditionFalse, v1.ReasonProvisioning, "10%")
	set(metav1.ConditionFalse, v1.ReasonProvisioning, "50%")
	set(metav1.ConditionFalse, v1.ReasonProvisioning, "50%")
	set(metav1.ConditionFalse, v1.ReasonPoweredOff, "device is inactive")
	set(metav1.ConditionFalse, v1.ReasonPoweredOff, "device is powering_on")
	set(metav1.ConditionTrue, v1.ReasonDeviceActive, "device is active")
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	assert.Equal(t, []string{
		"Normal Provisioning 10%",
		"Warning PoweredOff device is inactive",
		"Warning PoweredOff device is powering_on",
		"Normal DeviceActive device is active",
	}, got)
	assert.Equal(t, "device is active", conds[0].Message)
}
