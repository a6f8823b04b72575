package inventory

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
)

// Every write carries the Quarantined condition while the label sets the
// server aside, and none once a person removed the label.
func TestQuarantinedConditionFollowsTheLabel(t *testing.T) {
	inv := uiInventory(seederv1alpha1.InventoryNamespace, nodeFound, credsOK, reachable, authenticated)
	assert.Nil(t, conditions.Get(inv.Status.Conditions, equinixv1.InventoryQuarantined))

	inv.Labels = map[string]string{equinixv1.LabelQuarantined: "true"}
	inv.Annotations = map[string]string{equinixv1.AnnotationFailedInstalls: "2",
		equinixv1.AnnotationQuarantineReason: "server node-1 failed to install or join 2 times in a row"}
	prepare(inv)
	c := conditions.Get(inv.Status.Conditions, equinixv1.InventoryQuarantined)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, equinixv1.ReasonServerQuarantined, c.Reason)
	assert.Equal(t, "server node-1 failed to install or join 2 times in a row", c.Message)
	assert.Equal(t, seederv1alpha1.InventoryNodeReady, inv.Status.Status, "a quarantined server's BMC still serves Harvester")

	delete(inv.Labels, equinixv1.LabelQuarantined)
	prepare(inv)
	assert.Nil(t, conditions.Get(inv.Status.Conditions, equinixv1.InventoryQuarantined))
}

// A label a person set by hand has no reason of the pools': the message
// still says how many installs failed and how to clear it.
func TestQuarantineSetByHandIsExplained(t *testing.T) {
	inv := uiInventory(seederv1alpha1.InventoryNamespace)
	inv.Labels = map[string]string{equinixv1.LabelQuarantined: "yes"}
	inv.Annotations = map[string]string{equinixv1.AnnotationFailedInstalls: "1"}
	prepare(inv)
	c := conditions.Get(inv.Status.Conditions, equinixv1.InventoryQuarantined)
	require.NotNil(t, c)
	assert.Contains(t, c.Message, "(1 failed installs in a row)")
	assert.Contains(t, c.Message, "kubectl -n harvester-system label inventory node-1 equinix.harvesterhci.io/quarantined-")
}
