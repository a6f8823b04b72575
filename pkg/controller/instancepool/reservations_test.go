package instancepool

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

func TestWaitingForDevice(t *testing.T) {
	withCreated := func(status metav1.ConditionStatus, reason, device string) *equinixv1.Instance {
		i := inst("i", time.Minute).neverJoined().build()
		i.Status.InstanceID = device
		i.Status.Conditions = []metav1.Condition{{Type: equinixv1.InstanceDeviceCreated, Status: status, Reason: reason}}
		return i
	}
	cases := []struct {
		name string
		inst *equinixv1.Instance
		want bool
	}{
		{"nothing sent yet", inst("i", 0).neverJoined().build(), true},
		{"create refused: the reservation is used", withCreated(metav1.ConditionFalse, equinixv1.ReasonReservationUnavailable, ""), true},
		{"create refused: no capacity", withCreated(metav1.ConditionFalse, equinixv1.ReasonNoCapacity, ""), true},
		{"create in flight", withCreated(metav1.ConditionUnknown, equinixv1.ReasonCreateSent, ""), false},
		{"device created", withCreated(metav1.ConditionTrue, equinixv1.ReasonDeviceCreated, "d-1"), false},
		{"devices carry its tag", withCreated(metav1.ConditionFalse, equinixv1.ReasonDuplicateDevices, ""), false},
		{"its device went", withCreated(metav1.ConditionFalse, equinixv1.ReasonDeviceGone, ""), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, waitingForDevice(tc.inst)) })
	}
}
