package ownedpools

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// A server that fails to install quarantineAfter times in a row is set
// aside: labelled on its Inventory, with a Warning Event there and a
// Quarantined condition in its status; the
// replacement takes another free server; with none left the pool says it
// is short because of the quarantine. Removing the label clears the
// condition and lets the server be claimed again.
func TestServerThatKeepsFailingIsQuarantined(t *testing.T) {
	env := newEnv(t)
	// Neither server ever installs: nothing answers its network boot.
	addServer(t, env, "rack-q-1", mac(70), map[string]string{"rack": "q"})
	addServer(t, env, "rack-q-2", mac(71), map[string]string{"rack": "q"})
	pool := ownedPool("rack-q", 1, map[string]string{"rack": "q"})
	pool.Spec.Remediation.StartupTimeout = &metav1.Duration{Duration: 2 * time.Second}
	pool.Spec.Remediation.QuarantineAfter = 1
	createPool(t, env, pool)

	long := 3 * wait
	require.Eventually(t, func() bool {
		return env.Inventory("rack-q-1").Labels[equinixv1.LabelQuarantined] == "true"
	}, long, tick, "rack-q-1 was never quarantined")
	inv := env.Inventory("rack-q-1")
	assert.Equal(t, "1", inv.Annotations[equinixv1.AnnotationFailedInstalls])
	assert.Contains(t, inv.Annotations[equinixv1.AnnotationQuarantineReason], "remediation.startupTimeout")
	assert.NotContains(t, inv.Labels, equinixv1.LabelClaimedBy)
	assert.True(t, env.EventRecorded("rack-q-1", equinixv1.ReasonServerQuarantined))
	// The Inventory's status says it too, where Harvester's UI lists the
	// conditions: how many installs failed and how a person clears it.
	var quarantined *metav1.Condition
	require.Eventually(t, func() bool {
		quarantined = meta.FindStatusCondition(env.Inventory("rack-q-1").Status.Conditions, equinixv1.InventoryQuarantined)
		return quarantined != nil && quarantined.Status == metav1.ConditionTrue
	}, long, tick, "rack-q-1's status never said it is quarantined")
	assert.Equal(t, equinixv1.ReasonServerQuarantined, quarantined.Reason)
	assert.Contains(t, quarantined.Message, "1 times in a row")
	assert.Contains(t, quarantined.Message, "kubectl -n "+ns+" label inventory rack-q-1 "+equinixv1.LabelQuarantined+"-")

	// The replacement takes the other server, then that one fails too.
	require.Eventually(t, func() bool {
		return env.Inventory("rack-q-2").Labels[equinixv1.LabelQuarantined] == "true"
	}, long, tick, "the replacement never claimed, or never set aside, rack-q-2")
	require.Eventually(t, func() bool {
		p, err := env.Client.EquinixV1().InstancePools().Get(env.Ctx, "rack-q", metav1.GetOptions{})
		if err != nil {
			return false
		}
		c := meta.FindStatusCondition(p.Status.Conditions, equinixv1.PoolServersAvailable)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == equinixv1.ReasonServersQuarantined
	}, long, tick, "the pool never said it is short because of the quarantine")
	assert.True(t, env.EventRecorded("rack-q", equinixv1.ReasonServersQuarantined))
	for _, i := range instancesOf(t, env, "rack-q") {
		assert.Empty(t, i.Status.Server, "no quarantined server is claimed: %s holds %s", i.Name, i.Status.Server)
	}

	// A person clears rack-q-1: it is claimed again.
	_, err := env.Client.MetalV1alpha1().Inventories(ns).Patch(env.Ctx, "rack-q-1", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"`+equinixv1.LabelQuarantined+`":null}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return meta.FindStatusCondition(env.Inventory("rack-q-1").Status.Conditions, equinixv1.InventoryQuarantined) == nil
	}, long, tick, "the cleared server's status still says it is quarantined")
	require.Eventually(t, func() bool {
		return env.Inventory("rack-q-1").Labels[equinixv1.LabelClaimedBy] != ""
	}, long, tick, "the cleared server was never claimed again")
}
