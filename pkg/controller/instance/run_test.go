package instance

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/common"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
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
		{v1.InstanceDeviceActive, metav1.ConditionFalse, common.ReasonProvisioning, "Normal"},
		{v1.InstanceDeviceActive, metav1.ConditionFalse, "Reinstalling", "Normal"},
		{v1.InstanceNodeJoined, metav1.ConditionFalse, "Waiting", "Normal"},
		{v1.InstanceReady, metav1.ConditionFalse, "NodeNotReadyYet", "Normal"},
		{v1.InstanceInstalling, metav1.ConditionFalse, "Installed", "Normal"},
		{v1.InstanceNetworkConfigured, metav1.ConditionFalse, "Converging", "Normal"},
		{v1.InstanceDeviceActive, metav1.ConditionTrue, common.ReasonDeviceActive, "Normal"},
		{v1.InstanceDeviceActive, metav1.ConditionFalse, common.ReasonProvisionFailed, "Warning"},
		{v1.InstanceCredentialsReady, metav1.ConditionFalse, common.ReasonCredentialsInvalid, "Warning"},
		{v1.InstanceCredentialsReady, metav1.ConditionFalse, credentials.ReasonSecretNotFound, "Warning"},
		{v1.InstanceReady, metav1.ConditionFalse, common.ReasonNodeNotReady, "Warning"},
		{v1.InstanceDeviceActive, metav1.ConditionFalse, common.ReasonDeviceGone, "Warning"},
	}
	for _, tc := range cases {
		t.Run(tc.condType+"/"+tc.reason, func(t *testing.T) {
			rec := record.NewFakeRecorder(1)
			r := &run{h: &Handler{deps: &common.Deps{Recorder: rec}}, inst: &v1.Instance{}}
			r.setCondition(tc.condType, tc.status, tc.reason, "message")
			require.Len(t, rec.Events, 1)
			assert.Equal(t, tc.want+" "+tc.reason+" message", <-rec.Events)
		})
	}
}
