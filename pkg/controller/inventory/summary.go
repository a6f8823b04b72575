package inventory

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
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
var attention = []string{v1.BMCNodeFound, v1.BMCCredentialsReady, v1.BMCReachable, v1.BMCAuthenticated}

// cause is the first condition that holds the Inventory until a person
// acts, or nil.
func cause(inv *v1alpha1.Inventory) *metav1.Condition {
	for _, t := range attention {
		if c := conditions.Get(inv.Status.Conditions, t); c != nil && c.Status == metav1.ConditionFalse && v1.Stalls(c.Reason) {
			return c
		}
	}
	return nil
}

// stalledCondition is the Stalled condition the status implies.
func stalledCondition(inv *v1alpha1.Inventory) metav1.Condition {
	if inv.Namespace != v1alpha1.InventoryNamespace {
		return metav1.Condition{Type: v1.ConditionStalled, Status: metav1.ConditionTrue, Reason: v1.ReasonWrongNamespace, Message: wrongNamespace(inv)}
	}
	if c := cause(inv); c != nil {
		return metav1.Condition{Type: v1.ConditionStalled, Status: metav1.ConditionTrue, Reason: c.Reason, Message: c.Message}
	}
	if ready(inv) {
		return metav1.Condition{Type: v1.ConditionStalled, Status: metav1.ConditionFalse, Reason: v1.ReasonInventoryReady,
			Message: "the BMC is reachable and took the credentials"}
	}
	return metav1.Condition{Type: v1.ConditionStalled, Status: metav1.ConditionFalse, Reason: v1.ReasonNotStalled}
}

// ready says whether the BMC answered and took the credentials, with the
// Secret still as it was: what Seeder calls contactable.
func ready(inv *v1alpha1.Inventory) bool {
	conds := inv.Status.Conditions
	return conditions.IsTrue(conds, v1.BMCCredentialsReady) && conditions.IsTrue(conds, v1.BMCReachable) &&
		conditions.IsTrue(conds, v1.BMCAuthenticated)
}

// notReady maps the reason of the condition that holds an Inventory onto
// the status.status word that says it.
var notReady = map[string]v1alpha1.InventoryWorkflowStatus{
	v1.ReasonNodeNameMismatch:      v1alpha1.InventoryNodeNameMismatch,
	v1.ReasonNodeProvisioned:       v1alpha1.InventoryNodeProvisioned,
	v1.ReasonCredentialsMissing:    v1alpha1.InventoryCredentialsMissing,
	v1.ReasonSecretNotFound:        v1alpha1.InventoryCredentialsMissing,
	v1.ReasonSecretIncomplete:      v1alpha1.InventoryCredentialsMissing,
	v1.ReasonBMCUnreachable:        v1alpha1.InventoryBMCUnreachable,
	v1.ReasonBMCProtocolMismatch:   v1alpha1.InventoryBMCProtocolMismatch,
	v1.ReasonBMCCertificateInvalid: v1alpha1.InventoryBMCCertificateInvalid,
	v1.ReasonInvalidConfiguration:  v1alpha1.InventoryBMCError,
	v1.ReasonBMCError:              v1alpha1.InventoryBMCError,
	v1.ReasonAuthenticationFailed:  v1alpha1.InventoryBMCAuthenticationFailed,
}

// workflowStatus is the status.status the conditions imply.
func workflowStatus(inv *v1alpha1.Inventory) v1alpha1.InventoryWorkflowStatus {
	if inv.Namespace != v1alpha1.InventoryNamespace {
		return v1alpha1.InventoryWrongNamespace
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
		return v1alpha1.InventoryNodeReady
	}
	return v1alpha1.InventoryBMCNotContacted
}
