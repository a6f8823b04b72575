package ownedserver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
)

// Only a booted server that never joined and ran out of its startup time
// (or failed) counts as a failed install; a scale-down does not.
func TestInstallFailed(t *testing.T) {
	created := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	pool := &equinixv1.InstancePool{}
	pool.Spec.Remediation.StartupTimeout = &metav1.Duration{Duration: 10 * time.Minute}
	booted := metav1.NewTime(created.Add(time.Minute))
	inst := func(mut func(*equinixv1.Instance)) *equinixv1.Instance {
		i := &equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: "p-a", CreationTimestamp: metav1.NewTime(created)}}
		i.Status.NetworkBootRequestedAt = &booted
		mut(i)
		return i
	}
	later := created.Add(12 * time.Minute)
	assert.Contains(t, installFailed(inst(func(*equinixv1.Instance) {}), pool, later), "did not join within")
	assert.Empty(t, installFailed(inst(func(*equinixv1.Instance) {}), pool, created.Add(10*time.Minute)), "a scale-down in time")
	assert.Empty(t, installFailed(inst(func(i *equinixv1.Instance) { i.Status.JoinedAt = &booted }), pool, later), "joined")
	assert.Empty(t, installFailed(inst(func(i *equinixv1.Instance) { i.Status.NetworkBootRequestedAt = nil }), pool, later), "never booted")
	assert.Contains(t, installFailed(inst(func(i *equinixv1.Instance) { i.Status.Status = equinixv1.PhaseFailed }), pool, created), "failed")
	assert.Empty(t, installFailed(inst(func(*equinixv1.Instance) {}), nil, later), "pool gone: deleted with it")
}

// Failures count up on the Inventory; at the limit the label, the reason
// and how to clear it are set.
func TestCountFailureQuarantinesAtTheLimit(t *testing.T) {
	inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Name: "rack-a-1", Namespace: seederv1alpha1.InventoryNamespace}}
	assert.Empty(t, countFailure(inv, "it failed", 2))
	assert.Equal(t, 1, failedInstalls(inv))
	assert.False(t, Quarantined(inv))
	msg := countFailure(inv, "it failed", 2)
	assert.Equal(t, 2, failedInstalls(inv))
	assert.True(t, Quarantined(inv))
	assert.Contains(t, msg, "kubectl -n harvester-system label inventory rack-a-1 equinix.harvesterhci.io/quarantined-")
	assert.Equal(t, msg, inv.Annotations[equinixv1.AnnotationQuarantineReason])
	assert.Equal(t, defaultQuarantineAfter, quarantineAfter(&equinixv1.InstancePool{}))
}
