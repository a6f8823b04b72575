package inventory

import (
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
)

// The pools set a server aside with a label and annotations on its
// Inventory (the metadata they own); the Inventory's status has one
// writer, this chain. So the Quarantined condition is derived from that
// label on every write, as Stalled is from the other conditions: it
// appears and goes with the label, and costs a write only when it changes.

// quarantineCondition puts the Quarantined condition on the status while
// the server is set aside, and removes it once a person cleared it.
func quarantineCondition(inv *seederv1alpha1.Inventory) {
	if !common.Quarantined(inv) {
		conditions.Remove(&inv.Status.Conditions, equinixv1.InventoryQuarantined)
		return
	}
	conditions.Set(&inv.Status.Conditions, inv.Generation, equinixv1.InventoryQuarantined, metav1.ConditionTrue,
		equinixv1.ReasonServerQuarantined, quarantineMessage(inv))
}

// quarantineMessage says why the server is set aside, with how many
// installs failed in a row and how a person clears it. The pools' own
// reason says all of it; a label set by hand has none, so the count and
// the command are told here.
func quarantineMessage(inv *seederv1alpha1.Inventory) string {
	if why := inv.Annotations[equinixv1.AnnotationQuarantineReason]; why != "" {
		return why
	}
	failed, err := strconv.Atoi(inv.Annotations[equinixv1.AnnotationFailedInstalls])
	if err != nil || failed < 0 {
		failed = 0
	}
	return fmt.Sprintf("server %s is set aside by its label %s (%d failed installs in a row): no pool claims it until a person "+
		"removes the label: kubectl -n %s label inventory %s %s-", inv.Name, equinixv1.LabelQuarantined, failed,
		inv.Namespace, inv.Name, equinixv1.LabelQuarantined)
}
