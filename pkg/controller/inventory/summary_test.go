package inventory

import (
	"strings"
	"testing"

	"github.com/rancher/wrangler/v3/pkg/summary"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
)

const secretPassword = "Bmc-pw-never-shown-41"

func cond(t string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: status, Reason: reason, Message: msg}
}

// uiInventory is an Inventory as the controller leaves it after a pass that
// set conds.
func uiInventory(namespace string, conds ...metav1.Condition) *seederv1alpha1.Inventory {
	inv := &seederv1alpha1.Inventory{
		TypeMeta:   metav1.TypeMeta{APIVersion: seederv1alpha1.SchemeGroupVersion.String(), Kind: seederv1alpha1.InventoryKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "node-1", Generation: 1},
	}
	inv.Status.Conditions = conds
	prepare(inv)
	return inv
}

var (
	nodeFound     = cond(equinixv1.BMCNodeFound, metav1.ConditionTrue, equinixv1.ReasonNodeFound, "node node-1 exists")
	noNode        = cond(equinixv1.BMCNodeFound, metav1.ConditionFalse, equinixv1.ReasonServerWithoutNode, "no node is named node-1")
	otherNode     = cond(equinixv1.BMCNodeFound, metav1.ConditionFalse, equinixv1.ReasonNodeNameMismatch, `annotation names node "node-2"`)
	credsOK       = cond(equinixv1.BMCCredentialsReady, metav1.ConditionTrue, equinixv1.ReasonCredentialsReady, "Secret bmc/node-1 holds a username and a password")
	noSecret      = cond(equinixv1.BMCCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonSecretNotFound, "Secret bmc/node-1 not found")
	reachable     = cond(equinixv1.BMCReachable, metav1.ConditionTrue, equinixv1.ReasonBMCReachable, "the BMC at 10.0.0.7:623 answered")
	unreachable   = cond(equinixv1.BMCReachable, metav1.ConditionFalse, equinixv1.ReasonBMCUnreachable, "the BMC at 10.0.0.7:623: no answer")
	authenticated = cond(equinixv1.BMCAuthenticated, metav1.ConditionTrue, equinixv1.ReasonAuthenticated, "the BMC took the credentials")
	refused       = cond(equinixv1.BMCAuthenticated, metav1.ConditionFalse, equinixv1.ReasonAuthenticationFailed, "the BMC refused the credentials of Secret bmc/node-1")
	noLog         = cond(equinixv1.BMCEventLogAvailable, metav1.ConditionFalse, equinixv1.ReasonNoEventLog, "the BMC offers no event log")
	powerFailed   = cond(equinixv1.BMCPowerSynced, metav1.ConditionFalse, equinixv1.ReasonMaintenanceRequired, "the reboot was not sent")
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
		inv     *seederv1alpha1.Inventory
		status  seederv1alpha1.InventoryWorkflowStatus
		err     bool
		message string
	}{
		{"ready", uiInventory(seederv1alpha1.InventoryNamespace, nodeFound, credsOK, reachable, authenticated), seederv1alpha1.InventoryNodeReady, false, ""},
		{"ready, no event log, a power request refused", uiInventory(seederv1alpha1.InventoryNamespace, nodeFound, credsOK, reachable, authenticated, noLog, powerFailed),
			seederv1alpha1.InventoryNodeReady, false, ""},
		{"a server without a node", uiInventory(seederv1alpha1.InventoryNamespace, noNode, credsOK, reachable, authenticated), seederv1alpha1.InventoryNodeReady, false, ""},
		{"not contacted yet", uiInventory(seederv1alpha1.InventoryNamespace, nodeFound, credsOK), seederv1alpha1.InventoryBMCNotContacted, false, ""},
		{"no Secret", uiInventory(seederv1alpha1.InventoryNamespace, nodeFound, noSecret), seederv1alpha1.InventoryCredentialsMissing, true, "Secret bmc/node-1 not found"},
		{"unreachable", uiInventory(seederv1alpha1.InventoryNamespace, nodeFound, credsOK, unreachable, authenticated), seederv1alpha1.InventoryBMCUnreachable, true, "no answer"},
		{"refused", uiInventory(seederv1alpha1.InventoryNamespace, nodeFound, credsOK, reachable, refused), seederv1alpha1.InventoryBMCAuthenticationFailed, true, "refused the credentials"},
		{"the Secret went after a refusal", uiInventory(seederv1alpha1.InventoryNamespace, nodeFound, noSecret, reachable, refused), seederv1alpha1.InventoryCredentialsMissing, true, "not found"},
		{"another node's annotation", uiInventory(seederv1alpha1.InventoryNamespace, otherNode), seederv1alpha1.InventoryNodeNameMismatch, true, `names node "node-2"`},
		{"outside harvester-system", uiInventory("default"), seederv1alpha1.InventoryWrongNamespace, true, "served only in namespace harvester-system"},
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
	inv := uiInventory(seederv1alpha1.InventoryNamespace, nodeFound, credsOK, unreachable)
	assert.True(t, summary.Summarize(inv).Error)
	inv.Status.Conditions[2] = reachable
	inv.Status.Conditions = append(inv.Status.Conditions, authenticated)
	prepare(inv)
	assert.False(t, summary.Summarize(inv).Error)
	assert.Equal(t, seederv1alpha1.InventoryNodeReady, inv.Status.Status)
}

// An Inventory that was inventoryNodeReady stays so while the BMC that
// answered at its address, with these credentials, blips (unreachable, an
// error); not for what a person must fix, nor at another address, nor for
// an Inventory that never was ready.
func TestReadyKeptAcrossABlip(t *testing.T) {
	blip := func(mutate func(*seederv1alpha1.Inventory), conds ...metav1.Condition) *seederv1alpha1.Inventory {
		inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: seederv1alpha1.InventoryNamespace, Name: "node-1", Generation: 1}}
		inv.Spec.BaseboardManagementSpec.Connection = seederv1alpha1.Connection{Host: "10.0.0.7", Port: 623}
		inv.Status.Status = seederv1alpha1.InventoryNodeReady
		inv.Status.Conditions = conds
		inv.Status.Hardware = &seederv1alpha1.HardwareStatus{BMC: &seederv1alpha1.BMCStatus{Protocol: seederv1alpha1.ProtocolIPMI, Address: "10.0.0.7:623"}}
		if mutate != nil {
			mutate(inv)
		}
		prepare(inv)
		return inv
	}
	slow := cond(equinixv1.BMCReachable, metav1.ConditionFalse, equinixv1.ReasonBMCError, "the BMC did not answer in time")
	badCert := cond(equinixv1.BMCReachable, metav1.ConditionFalse, equinixv1.ReasonBMCCertificateChanged, "another certificate")
	for _, tc := range []struct {
		name string
		inv  *seederv1alpha1.Inventory
		want seederv1alpha1.InventoryWorkflowStatus
	}{
		{"unreachable", blip(nil, nodeFound, credsOK, unreachable, authenticated), seederv1alpha1.InventoryNodeReady},
		{"slow", blip(nil, nodeFound, credsOK, slow, authenticated), seederv1alpha1.InventoryNodeReady},
		{"a changed certificate", blip(nil, nodeFound, credsOK, badCert, authenticated), seederv1alpha1.InventoryBMCCertificateChanged},
		{"credentials refused", blip(nil, nodeFound, credsOK, reachable, refused), seederv1alpha1.InventoryBMCAuthenticationFailed},
		{"the Secret gone", blip(nil, nodeFound, noSecret, unreachable, authenticated), seederv1alpha1.InventoryCredentialsMissing},
		{"another address", blip(func(inv *seederv1alpha1.Inventory) {
			inv.Spec.BaseboardManagementSpec.Connection.Host = "10.0.0.8"
		}, nodeFound, credsOK, unreachable, authenticated), seederv1alpha1.InventoryBMCUnreachable},
		{"never ready", blip(func(inv *seederv1alpha1.Inventory) { inv.Status.Status = seederv1alpha1.InventoryBMCNotContacted },
			nodeFound, credsOK, unreachable, authenticated), seederv1alpha1.InventoryBMCUnreachable},
		{"nothing answered before", blip(func(inv *seederv1alpha1.Inventory) { inv.Status.Hardware.BMC = nil },
			nodeFound, credsOK, unreachable, authenticated), seederv1alpha1.InventoryBMCUnreachable},
	} {
		assert.Equal(t, tc.want, tc.inv.Status.Status, tc.name)
	}
	// The UI's banner says what is wrong meanwhile.
	inv := blip(nil, nodeFound, credsOK, unreachable, authenticated)
	assert.True(t, strings.Contains(stalledCondition(inv).Message, "no answer"))
}
