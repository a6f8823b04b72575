package uistate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rancher/wrangler/v3/pkg/summary"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// badge is what the UI shows for an object.
type badge int

const (
	// showsActive: the green "active" badge, no message.
	showsActive badge = iota
	// showsProgress: a transitioning badge (any state word), not an error.
	showsProgress
	// showsError: an error badge carrying message.
	showsError
)

type uiCase struct {
	name string
	obj  runtime.Object
	want badge
	// message must be part of the summary's message.
	message string
}

func instanceCase(name string, inst *equinixv1.Instance, want badge, message string) uiCase {
	return uiCase{name: "Instance " + name, obj: inst, want: want, message: message}
}

func poolCase(name string, pool *equinixv1.InstancePool, want badge, message string) uiCase {
	return uiCase{name: "InstancePool " + name, obj: pool, want: want, message: message}
}

func check(t *testing.T, tc uiCase) {
	t.Helper()
	s := summary.Summarize(tc.obj)
	msg := strings.Join(s.Message, "; ")
	switch tc.want {
	case showsActive:
		assert.Equal(t, "active", s.State, "summary %+v", s)
		assert.False(t, s.Error, "summary %+v", s)
		assert.False(t, s.Transitioning, "summary %+v", s)
	case showsProgress:
		assert.True(t, s.Transitioning, "not shown as in progress: %+v", s)
		assert.False(t, s.Error, "summary %+v", s)
		assert.NotEqual(t, "active", s.State, "summary %+v", s)
	case showsError:
		assert.True(t, s.Error, "not shown as an error: %+v", s)
		assert.Equal(t, "error", s.State, "summary %+v", s)
	}
	assert.Contains(t, msg, tc.message, "summary %+v", s)
}

// TestUIStateWithoutUIConditions: the phases that show right even on a status
// written before the controller stored Reconciling and Stalled (an upgrade).
func TestUIStateWithoutUIConditions(t *testing.T) {
	for _, tc := range passingWithout() {
		t.Run(tc.name, func(t *testing.T) { check(t, tc) })
	}
}

// withUIConditions adds the conditions the controller is to store, the way
// conditions.Set would (new types go at the end).
func withUIConditions(obj runtime.Object) runtime.Object {
	switch o := obj.(type) {
	case *equinixv1.Instance:
		c := o.DeepCopy()
		r, s := harvester.InstanceUIConditions(c.Status)
		c.Status.Conditions = append(c.Status.Conditions, stamp(r), stamp(s))
		return c
	case *equinixv1.InstancePool:
		c := o.DeepCopy()
		r, s := harvester.PoolUIConditions(c.Status)
		c.Status.Conditions = append(c.Status.Conditions, stamp(r), stamp(s))
		return c
	}
	panic(fmt.Sprintf("unexpected %T", obj))
}

func stamp(c metav1.Condition) metav1.Condition {
	return cond(c.Type, c.Status, c.Reason, c.Message)
}

// TestUIStateWithUIConditions: with Reconciling and Stalled stored, as the
// controller does on every status write, every phase shows right.
// tests/integration/provisioning checks the same on the statuses the running
// controller writes.
func TestUIStateWithUIConditions(t *testing.T) {
	for _, tc := range append(passingWithout(), needingUIConditions()...) {
		t.Run(tc.name, func(t *testing.T) {
			tc.obj = withUIConditions(tc.obj)
			check(t, tc)
		})
	}
}

// TestStalledReasons: every reason the controller uses for a problem a person
// must fix makes a server Stalled; the health and maintenance reasons, which
// the Ready and Deleting conditions already show, do not.
func TestStalledReasons(t *testing.T) {
	attention := map[string]string{
		equinixv1.ReasonCredentialsInvalid: equinixv1.InstanceCredentialsReady, equinixv1.ReasonSecretNotFound: equinixv1.InstanceCredentialsReady,
		equinixv1.ReasonSecretIncomplete: equinixv1.InstanceCredentialsReady, equinixv1.ReasonDuplicateDevices: equinixv1.InstanceDeviceCreated,
		equinixv1.ReasonProvisionFailed: equinixv1.InstanceDeviceActive, equinixv1.ReasonDeviceGone: equinixv1.InstanceDeviceActive,
		equinixv1.ReasonPoweredOff: equinixv1.InstanceDeviceActive, equinixv1.ReasonInvalidRequest: equinixv1.InstanceDeviceCreated,
		equinixv1.ReasonNoCapacity: equinixv1.InstanceDeviceCreated, "PortMissing": equinixv1.InstanceNetworkConfigured,
		"StepFailed": equinixv1.InstanceNetworkConfigured, "InvalidConfiguration": equinixv1.InstanceInstallConfigured,
		equinixv1.ReasonClusterURLMissing: equinixv1.InstanceInstallConfigured, equinixv1.ReasonJoinTokenMissing: equinixv1.InstanceInstallConfigured,
		equinixv1.ReasonVersionUnknown: equinixv1.InstanceInstallConfigured, equinixv1.ReasonIPXEURLMissing: equinixv1.InstanceInstallConfigured,
		"NodeNameTaken": equinixv1.InstanceNodeJoined,
	}
	for reason, condType := range attention {
		_, stalled := harvester.InstanceUIConditions(newInstance(equinixv1.PhaseProvisioning, cond(condType, fa, reason, "what to fix")).Status)
		assert.Equal(t, metav1.ConditionTrue, stalled.Status, reason)
		assert.Equal(t, reason, stalled.Reason)
		assert.Equal(t, "what to fix", stalled.Message)
	}
	for _, c := range []metav1.Condition{notReady, notReadyYet, nodeWaiting, converging, provisioning,
		cond(equinixv1.InstanceReady, fa, "NodeGone", "node gone"), cond(equinixv1.InstanceDeleting, tr, "MaintenanceRefused", "refused")} {
		_, stalled := harvester.InstanceUIConditions(newInstance(equinixv1.PhaseJoining, c).Status)
		assert.Equal(t, metav1.ConditionFalse, stalled.Status, c.Reason)
	}
	// Pools: the stop after too many failures, and missing inputs.
	for _, c := range []metav1.Condition{tooMany, credsMissing, cond(equinixv1.PoolJoinInfoReady, fa, equinixv1.ReasonJoinInfoMissing, "no VIP")} {
		_, stalled := harvester.PoolUIConditions(newPool(equinixv1.PoolPhasePending, 0, c).Status)
		assert.Equal(t, metav1.ConditionTrue, stalled.Status, c.Reason)
		assert.Equal(t, c.Reason, stalled.Reason)
	}
}
