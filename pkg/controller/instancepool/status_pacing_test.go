package instancepool

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

func poolStatus(ready int32, phase, reason, message string) *equinixv1.InstancePoolStatus {
	return &equinixv1.InstancePoolStatus{Status: phase, Ready: ready, Requested: 10, ObservedGeneration: 1,
		Conditions: []metav1.Condition{{Type: equinixv1.PoolReady, Status: metav1.ConditionFalse, Reason: reason, Message: message,
			LastTransitionTime: metav1.Unix(int64(ready), 0)}}}
}

func TestStatusPacingHoldsOnlyProgress(t *testing.T) {
	now := time.Unix(1000, 0)
	p := newStatusPacing()
	stored := poolStatus(3, equinixv1.PoolPhaseProvisioning, equinixv1.ReasonNotAllReady, "3 of 10 servers are managed with a Ready node")
	progress := poolStatus(4, equinixv1.PoolPhaseProvisioning, equinixv1.ReasonNotAllReady, "4 of 10 servers are managed with a Ready node")

	assert.Zero(t, p.hold("a", stored, progress, now), "a pool never written waits for nothing")
	p.wrote("a", now)
	assert.Equal(t, 3*time.Second, p.hold("a", stored, progress, now.Add(2*time.Second)))
	assert.Zero(t, p.hold("a", stored, progress, now.Add(progressWriteSpacing)))
	assert.Zero(t, p.hold("b", stored, progress, now.Add(time.Second)), "each pool has its own pace")

	milestones := map[string]*equinixv1.InstancePoolStatus{
		"a phase":            poolStatus(4, equinixv1.PoolPhaseReady, equinixv1.ReasonNotAllReady, ""),
		"a condition reason": poolStatus(4, equinixv1.PoolPhaseProvisioning, equinixv1.ReasonAllReady, ""),
		"a failure": func() *equinixv1.InstancePoolStatus {
			s := progress.DeepCopy()
			s.ConsecutiveFailures = 1
			return s
		}(),
		"a generation": func() *equinixv1.InstancePoolStatus {
			s := progress.DeepCopy()
			s.ObservedGeneration = 2
			return s
		}(),
	}
	for name, next := range milestones {
		assert.Zero(t, p.hold("a", stored, next, now.Add(time.Second)), name+" is written at once")
	}

	p.forget("a")
	assert.Zero(t, p.hold("a", stored, progress, now.Add(time.Second)))
}
