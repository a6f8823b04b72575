package common

import (
	corev1 "k8s.io/api/core/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
)

// OwnedNode reports whether node is the Node of the Instance: named as its
// server joins (the install sets the host name, see Instance.NodeName) and
// carrying its instance label, which names the Instance. A Node of that
// name without the label is someone else's and is never touched.
func OwnedNode(node *corev1.Node, inst *equinixv1.Instance) bool {
	name := inst.NodeName()
	return node != nil && name != "" && node.Name == name && node.Labels[equinixv1.LabelInstance] == inst.Name
}

// ClaimedBy reports whether the Inventory is claimed by that Instance (its
// name and UID).
func ClaimedBy(inv *seederv1alpha1.Inventory, inst *equinixv1.Instance) bool {
	return inv != nil && inv.Labels[equinixv1.LabelClaimedBy] == inst.Name && inv.Annotations[equinixv1.AnnotationClaimUID] == string(inst.UID)
}

// Quarantined reports whether a person set the server aside, or the pools
// did after it failed to install too often: no pool claims it until the
// label goes. Any value counts, so that a hand-written "yes" sets it aside
// as surely as "true".
func Quarantined(inv *seederv1alpha1.Inventory) bool {
	return inv.Labels[equinixv1.LabelQuarantined] != ""
}
