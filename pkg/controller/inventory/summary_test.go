package inventory

import (
	"strings"
	"testing"

	"github.com/rancher/wrangler/v3/pkg/summary"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
)

const secretPassword = "Bmc-pw-never-shown-41"

func cond(t string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: status, Reason: reason, Message: msg}
}

// uiInventory is an Inventory as the controller leaves it after a pass that
// set conds.
func uiInventory(namespace string, conds ...metav1.Condition) *v1alpha1.Inventory {
	inv := &v1alpha1.Inventory{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.InventoryKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "node-1", Generation: 1},
	}
	inv.Status.Conditions = conds
	prepare(inv)
	return inv
}

var (
	nodeFound     = cond(v1.BMCNodeFound, metav1.ConditionTrue, v1.ReasonNodeFound, "node node-1 exists")
	noNode        = cond(v1.BMCNodeFound, metav1.ConditionFalse, v1.ReasonServerWithoutNode, "no node is named node-1")
	otherNode     = cond(v1.BMCNodeFound, metav1.ConditionFalse, v1.ReasonNodeNameMismatch, `annotation names node "node-2"`)
	credsOK       = cond(v1.BMCCredentialsReady, metav1.ConditionTrue, v1.ReasonCredentialsReady, "Secret bmc/node-1 holds a username and a password")
	noSecret      = cond(v1.BMCCredentialsReady, metav1.ConditionFalse, v1.ReasonSecretNotFound, "Secret bmc/node-1 not found")
	reachable     = cond(v1.BMCReachable, metav1.ConditionTrue, v1.ReasonBMCReachable, "the BMC at 10.0.0.7:623 answered")
	unreachable   = cond(v1.BMCReachable, metav1.ConditionFalse, v1.ReasonBMCUnreachable, "the BMC at 10.0.0.7:623: no answer")
	authenticated = cond(v1.BMCAuthenticated, metav1.ConditionTrue, v1.ReasonAuthenticated, "the BMC took the credentials")
	refused       = cond(v1.BMCAuthenticated, metav1.ConditionFalse, v1.ReasonAuthenticationFailed, "the BMC refused the credentials of Secret bmc/node-1")
	noLog         = cond(v1.BMCEventLogAvailable, metav1.ConditionFalse, v1.ReasonNoEventLog, "the BMC offers no event log")
	powerFailed   = cond(v1.BMCPowerSynced, metav1.ConditionFalse, v1.ReasonMaintenanceRequired, "the reboot was not sent")
)

// What the Harvester UI shows of an Inventory: its host's error banner
// comes from steve's summary of the object (wrangler pkg/summary), which
// is an error only for a condition of reason Error or a Stalled (Failed)
// one that is True. The controller's Stalled carries the first cause a
// person must fix; status.status is what Harvester's powerActionPossible
// quotes.
func TestWhatTheUIShows(t *testing.T) {
	for _, tc := range []struct {
		name    string
		inv     *v1alpha1.Inventory
		status  v1alpha1.InventoryWorkflowStatus
		err     bool
		message string
	}{
		{"ready", uiInventory(v1alpha1.InventoryNamespace, nodeFound, credsOK, reachable, authenticated), v1alpha1.InventoryNodeReady, false, ""},
		{"ready, no event log, a power request refused", uiInventory(v1alpha1.InventoryNamespace, nodeFound, credsOK, reachable, authenticated, noLog, powerFailed),
			v1alpha1.InventoryNodeReady, false, ""},
		{"a server without a node", uiInventory(v1alpha1.InventoryNamespace, noNode, credsOK, reachable, authenticated), v1alpha1.InventoryNodeReady, false, ""},
		{"not contacted yet", uiInventory(v1alpha1.InventoryNamespace, nodeFound, credsOK), v1alpha1.InventoryBMCNotContacted, false, ""},
		{"no Secret", uiInventory(v1alpha1.InventoryNamespace, nodeFound, noSecret), v1alpha1.InventoryCredentialsMissing, true, "Secret bmc/node-1 not found"},
		{"unreachable", uiInventory(v1alpha1.InventoryNamespace, nodeFound, credsOK, unreachable, authenticated), v1alpha1.InventoryBMCUnreachable, true, "no answer"},
		{"refused", uiInventory(v1alpha1.InventoryNamespace, nodeFound, credsOK, reachable, refused), v1alpha1.InventoryBMCAuthenticationFailed, true, "refused the credentials"},
		{"the Secret went after a refusal", uiInventory(v1alpha1.InventoryNamespace, nodeFound, noSecret, reachable, refused), v1alpha1.InventoryCredentialsMissing, true, "not found"},
		{"another node's annotation", uiInventory(v1alpha1.InventoryNamespace, otherNode), v1alpha1.InventoryNodeNameMismatch, true, `names node "node-2"`},
		{"outside harvester-system", uiInventory("default"), v1alpha1.InventoryWrongNamespace, true, "served only in namespace harvester-system"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.status, tc.inv.Status.Status)
			s := summary.Summarize(tc.inv)
			msg := strings.Join(s.Message, "; ")
			assert.Equal(t, tc.err, s.Error, "summary %+v", s)
			if tc.err {
				assert.Equal(t, "error", s.State)
				assert.Contains(t, msg, tc.message)
			} else {
				assert.False(t, s.Transitioning, "summary %+v", s)
			}
			assert.NotContains(t, msg, secretPassword)
		})
	}
}

// Stalled follows the other conditions on every write, so a fixed cause
// clears the banner.
func TestStalledClearsOnceReady(t *testing.T) {
	inv := uiInventory(v1alpha1.InventoryNamespace, nodeFound, credsOK, unreachable)
	assert.True(t, summary.Summarize(inv).Error)
	inv.Status.Conditions[2] = reachable
	inv.Status.Conditions = append(inv.Status.Conditions, authenticated)
	prepare(inv)
	assert.False(t, summary.Summarize(inv).Error)
	assert.Equal(t, v1alpha1.InventoryNodeReady, inv.Status.Status)
}
