package reconcile

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
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
		{equinixv1.InstanceDeviceActive, metav1.ConditionFalse, equinixv1.ReasonProvisioning, "Normal"},
		{equinixv1.InstanceDeviceActive, metav1.ConditionFalse, equinixv1.ReasonReinstalling, "Normal"},
		{equinixv1.InstanceNodeJoined, metav1.ConditionFalse, equinixv1.ReasonWaiting, "Normal"},
		{equinixv1.InstanceReady, metav1.ConditionFalse, equinixv1.ReasonNodeNotReadyYet, "Normal"},
		{equinixv1.InstanceInstalling, metav1.ConditionFalse, equinixv1.ReasonInstalled, "Normal"},
		{equinixv1.InstanceNetworkConfigured, metav1.ConditionFalse, equinixv1.ReasonConverging, "Normal"},
		{equinixv1.InstanceDeviceActive, metav1.ConditionTrue, equinixv1.ReasonDeviceActive, "Normal"},
		{equinixv1.PoolReady, metav1.ConditionFalse, equinixv1.ReasonNotAllReady, "Normal"},
		{equinixv1.InstanceDeviceActive, metav1.ConditionFalse, equinixv1.ReasonProvisionFailed, "Warning"},
		{equinixv1.InstanceCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonCredentialsInvalid, "Warning"},
		{equinixv1.InstanceCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonSecretNotFound, "Warning"},
		{equinixv1.InstanceCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonProjectMismatch, "Warning"},
		{equinixv1.InstanceReady, metav1.ConditionFalse, equinixv1.ReasonNodeNotReady, "Warning"},
		{equinixv1.InstanceDeviceActive, metav1.ConditionFalse, equinixv1.ReasonDeviceGone, "Warning"},
		{equinixv1.PoolRemediationBlocked, metav1.ConditionTrue, equinixv1.ReasonQuorumGuard, "Warning"},
		{equinixv1.PoolCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonCredentialsMissing, "Warning"},
	}
	for _, tc := range cases {
		t.Run(tc.condType+"/"+tc.reason, func(t *testing.T) {
			rec := record.NewFakeRecorder(1)
			c := NewConditionRecorder(rec)
			var conds []metav1.Condition
			c.Set(&equinixv1.Instance{}, &conds, 1, tc.condType, tc.status, tc.reason, "message")
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
	obj := &equinixv1.Instance{}
	set := func(status metav1.ConditionStatus, reason, msg string) {
		c.Set(obj, &conds, 1, equinixv1.InstanceDeviceActive, status, reason, msg)
	}
	set(metav1.ConditionFalse, equinixv1.ReasonProvisioning, "10%")
	set(metav1.ConditionFalse, equinixv1.ReasonProvisioning, "50%")
	set(metav1.ConditionFalse, equinixv1.ReasonProvisioning, "50%")
	set(metav1.ConditionFalse, equinixv1.ReasonPoweredOff, "device is inactive")
	set(metav1.ConditionFalse, equinixv1.ReasonPoweredOff, "device is powering_on")
	set(metav1.ConditionTrue, equinixv1.ReasonDeviceActive, "device is active")
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
