package fencing

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// A controller killed after it tainted the node but before it stored
// Fenced leaves the intent (PowerOffSent, or FenceTainting for a server
// found off already) and the taint. Meanwhile a person
// switched the server on and the node is Ready: the restarted controller
// takes the fence as done and lifts the taint, rather than calling the
// power-off one that never showed and leaving the taint on for good (and
// uncounted against the bound).
func TestFenceRestartBetweenTaintAndStatusLiftsTheTaint(t *testing.T) {
	// The intent of a power-off sent, and of a server found off already.
	for host, reason := range map[string]string{"hv-crash": equinixv1.ReasonFencePowerOffSent, "hv-crash-off": equinixv1.ReasonFenceTainting} {
		t.Run(reason, func(t *testing.T) { restartBetweenTaintAndStatus(t, host, reason) })
	}
}

func restartBetweenTaintAndStatus(t *testing.T, host, reason string) {
	env := newEnv(t, settings{})
	env.CreateReadyNode("hv-peer-" + host)
	sim, _ := redfishHost(t, env, host)
	env.StopController()

	inv := env.Inventory(host)
	inv.Status.Conditions = append(inv.Status.Conditions, metav1.Condition{Type: equinixv1.BMCFenced, Status: metav1.ConditionUnknown,
		Reason: reason, Message: "the intent, stored before the taint", LastTransitionTime: metav1.Now(),
		ObservedGeneration: inv.Generation})
	_, err := env.Client.MetalV1alpha1().Inventories(ns).UpdateStatus(env.Ctx, inv, metav1.UpdateOptions{})
	require.NoError(t, err)
	patch := `{"spec":{"taints":[{"key":"` + corev1.TaintNodeOutOfService + `","value":"` + equinixv1.TaintOutOfServiceValue + `","effect":"NoExecute"}]}}`
	_, err = env.Kube.CoreV1().Nodes().Patch(env.Ctx, host, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
	require.True(t, tainted(t, env, host))

	start(env, settings{})
	env.Eventually(func() bool { return !tainted(t, env, host) }, 30*time.Second,
		"the taint written before the restart is still on: %s", describe(fenced(t, env, host)))
	fenceReason(t, env, host, metav1.ConditionFalse, equinixv1.ReasonFenceLifted)
	assert.Empty(t, sim.Resets(), "a command was sent after the restart")
}
