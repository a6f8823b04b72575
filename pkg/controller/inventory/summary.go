package inventory

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/bmcendpoint"
)

// What Harvester and its UI read of an Inventory is derived from its typed
// conditions on every write. Harvester's node actions read status.status:
// inventoryNodeReady, or a word saying what is wrong, which its 409 quotes.
// The UI shows an error banner on a host, with the message, only for an
// object whose summary (wrangler's pkg/summary, through steve) is an error:
// a condition of reason Error, or Stalled (or Failed) True. The typed
// conditions carry reasons of their own, so Stalled says it: True with the
// first cause a person must fix, False otherwise.

// attention is the order in which the conditions are read for a cause: the
// order of the pass.
var attention = []string{equinixv1.BMCNodeFound, equinixv1.BMCCredentialsReady, equinixv1.BMCReachable, equinixv1.BMCAuthenticated}

// cause is the first condition that holds the Inventory until a person
// acts, or nil.
func cause(inv *seederv1alpha1.Inventory) *metav1.Condition {
	for _, t := range attention {
		if c := conditions.Get(inv.Status.Conditions, t); c != nil && c.Status == metav1.ConditionFalse && equinixv1.Stalls(c.Reason) {
			return c
		}
	}
	return nil
}

// stalledCondition is the Stalled condition the status implies.
func stalledCondition(inv *seederv1alpha1.Inventory) metav1.Condition {
	if inv.Namespace != seederv1alpha1.InventoryNamespace {
		return metav1.Condition{Type: equinixv1.ConditionStalled, Status: metav1.ConditionTrue, Reason: equinixv1.ReasonWrongNamespace, Message: wrongNamespace(inv)}
	}
	if c := cause(inv); c != nil {
		return metav1.Condition{Type: equinixv1.ConditionStalled, Status: metav1.ConditionTrue, Reason: c.Reason, Message: c.Message}
	}
	if ready(inv) {
		return metav1.Condition{Type: equinixv1.ConditionStalled, Status: metav1.ConditionFalse, Reason: equinixv1.ReasonInventoryReady,
			Message: "the BMC is reachable and took the credentials"}
	}
	return metav1.Condition{Type: equinixv1.ConditionStalled, Status: metav1.ConditionFalse, Reason: equinixv1.ReasonNotStalled}
}

// ready says whether the BMC answered and took the credentials, with the
// Secret still as it was: what Seeder calls contactable.
func ready(inv *seederv1alpha1.Inventory) bool {
	conds := inv.Status.Conditions
	return conditions.IsTrue(conds, equinixv1.BMCCredentialsReady) && conditions.IsTrue(conds, equinixv1.BMCReachable) &&
		conditions.IsTrue(conds, equinixv1.BMCAuthenticated)
}

// blipReasons are the BMC's failures that pass by themselves: nothing
// answered, or the BMC failed or was slow. A wrong protocol, certificate,
// setting or password is a person's to fix.
var blipReasons = map[string]bool{equinixv1.ReasonBMCUnreachable: true, equinixv1.ReasonBMCError: true}

// blip says whether the only thing keeping the Inventory from ready is the
// BMC failing to answer, at the address that answered before with these
// credentials: its node, Secret and credentials are as they were when it
// answered last, and its connection still names that address.
func blip(inv *seederv1alpha1.Inventory) bool {
	conds := inv.Status.Conditions
	reachable := conditions.Get(conds, equinixv1.BMCReachable)
	if reachable == nil || reachable.Status != metav1.ConditionFalse || !blipReasons[reachable.Reason] ||
		!conditions.IsTrue(conds, equinixv1.BMCCredentialsReady) || !conditions.IsTrue(conds, equinixv1.BMCAuthenticated) {
		return false
	}
	if c := conditions.Get(conds, equinixv1.BMCNodeFound); c != nil && c.Status == metav1.ConditionFalse && equinixv1.Stalls(c.Reason) {
		return false
	}
	hw := inv.Status.Hardware
	if hw == nil || hw.BMC == nil || hw.BMC.Address == "" {
		return false
	}
	for _, ep := range bmcendpoint.Candidates(inv, 0) {
		if string(ep.Protocol) == string(hw.BMC.Protocol) && ep.Address() == hw.BMC.Address {
			return true
		}
	}
	return false
}

// notReady maps the reason of the condition that holds an Inventory onto
// the status.status word that says it.
var notReady = map[string]seederv1alpha1.InventoryWorkflowStatus{
	equinixv1.ReasonNodeNameMismatch:      seederv1alpha1.InventoryNodeNameMismatch,
	equinixv1.ReasonNodeProvisioned:       seederv1alpha1.InventoryNodeProvisioned,
	equinixv1.ReasonCredentialsMissing:    seederv1alpha1.InventoryCredentialsMissing,
	equinixv1.ReasonSecretNotFound:        seederv1alpha1.InventoryCredentialsMissing,
	equinixv1.ReasonSecretIncomplete:      seederv1alpha1.InventoryCredentialsMissing,
	equinixv1.ReasonBMCUnreachable:        seederv1alpha1.InventoryBMCUnreachable,
	equinixv1.ReasonBMCProtocolMismatch:   seederv1alpha1.InventoryBMCProtocolMismatch,
	equinixv1.ReasonBMCCertificateInvalid: seederv1alpha1.InventoryBMCCertificateInvalid,
	equinixv1.ReasonBMCCertificateChanged: seederv1alpha1.InventoryBMCCertificateChanged,
	equinixv1.ReasonInvalidConfiguration:  seederv1alpha1.InventoryBMCError,
	equinixv1.ReasonBMCError:              seederv1alpha1.InventoryBMCError,
	equinixv1.ReasonAuthenticationFailed:  seederv1alpha1.InventoryBMCAuthenticationFailed,
}

// workflowStatus is the status.status the conditions imply. An Inventory
// that was inventoryNodeReady stays so while its BMC blips (see blip), as
// Seeder keeps it: Harvester's power actions answer 409 otherwise, and a
// request made meanwhile is better tried, and answered failed if the BMC
// still does not answer.
func workflowStatus(inv *seederv1alpha1.Inventory) seederv1alpha1.InventoryWorkflowStatus {
	if inv.Namespace != seederv1alpha1.InventoryNamespace {
		return seederv1alpha1.InventoryWrongNamespace
	}
	if inv.Status.Status == seederv1alpha1.InventoryNodeReady && blip(inv) {
		return seederv1alpha1.InventoryNodeReady
	}
	for _, t := range attention {
		c := conditions.Get(inv.Status.Conditions, t)
		if c == nil || c.Status != metav1.ConditionFalse {
			continue
		}
		if s, ok := notReady[c.Reason]; ok {
			return s
		}
	}
	if ready(inv) {
		return seederv1alpha1.InventoryNodeReady
	}
	return seederv1alpha1.InventoryBMCNotContacted
}
