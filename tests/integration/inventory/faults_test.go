package inventory

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// A BMC that goes away, refuses the credentials for a while, or answers
// slower than the timeout gets a condition and an Event naming the
// problem, and Stalled carries it to the UI's banner; status.status (what
// Harvester's 409 quotes) says a refusal, while a BMC that answered before
// and now does not is a blip: the host stays inventoryNodeReady, as with
// Seeder. The Inventory recovers by itself once the BMC does (after a
// refusal, once the minute every refused login is held for is over).
func TestRedfishRecoversFromUnreachableUnauthorizedAndSlow(t *testing.T) {
	env := newEnv(t)
	sim, srv := redfishBMC(t)
	env.CreateReadyNode("rf-faults")
	env.CreateBMCSecret("rf-faults", bmcUser, bmcPassword)
	env.CreateInventory(framework.RedfishInventory("rf-faults", srv))
	recovered := func() bool {
		return ready(env, "rf-faults") && hasCondition(env, "rf-faults", equinixv1.ConditionStalled, metav1.ConditionFalse, equinixv1.ReasonInventoryReady)
	}
	env.Eventually(recovered, time.Minute, "the BMC was never reachable")

	require.NoError(t, srv.GoAway())
	env.Eventually(func() bool {
		return hasCondition(env, "rf-faults", equinixv1.BMCReachable, metav1.ConditionFalse, equinixv1.ReasonBMCUnreachable) &&
			hasCondition(env, "rf-faults", equinixv1.ConditionStalled, metav1.ConditionTrue, equinixv1.ReasonBMCUnreachable) &&
			env.Inventory("rf-faults").Status.Status == seederv1alpha1.InventoryNodeReady
	}, time.Minute, "an unreachable BMC was not reported")
	assert.True(t, env.EventRecorded("rf-faults", equinixv1.ReasonBMCUnreachable))
	require.NoError(t, srv.ComeBack())
	env.Eventually(recovered, time.Minute, "the Inventory did not recover from an unreachable BMC")

	id := sim.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultUnauthorized})
	env.Eventually(func() bool {
		return hasCondition(env, "rf-faults", equinixv1.BMCAuthenticated, metav1.ConditionFalse, equinixv1.ReasonAuthenticationFailed) &&
			env.Inventory("rf-faults").Status.Status == seederv1alpha1.InventoryBMCAuthenticationFailed
	}, time.Minute, "a 401 was not reported")
	assert.True(t, env.EventRecorded("rf-faults", equinixv1.ReasonAuthenticationFailed))
	refusedAt := sim.Requests()
	sim.RemoveFault(id)
	// A refused login is not tried again for a minute, whatever the poll
	// interval (BMCs lock accounts), so the recovery waits for that.
	assert.Never(t, func() bool { return sim.Requests() > refusedAt }, 5*time.Second, 100*time.Millisecond,
		"the BMC was asked again within the minute after it refused the credentials")
	env.Eventually(recovered, 2*time.Minute, "the Inventory did not recover from a 401")

	id = sim.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultLatency, Latency: 3 * bmcTimeout})
	env.Eventually(func() bool {
		c := conditions.Get(env.Inventory("rf-faults").Status.Conditions, equinixv1.BMCReachable)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "in time")
	}, time.Minute, "a slow BMC was not reported")
	sim.RemoveFault(id)
	env.Eventually(recovered, time.Minute, "the Inventory did not recover from a slow BMC")
	env.AssertAbsent(bmcPassword)
}

// Bad input gets a condition and an Event naming it, and the not-ready word
// in status.status: a wrong password (until the Secret is fixed), a Secret
// that does not exist, an annotation naming another node, a node of the
// addon's own servers, an untrusted certificate, a BMC spoken to in the
// wrong protocol, and an Inventory outside harvester-system.
func TestBadInputIsNamed(t *testing.T) {
	env := newEnv(t)
	_, srv := redfishBMC(t)
	const wrong = "Wrong-pw-never-shown-77"
	env.CreateBMCSecret("bad-pw", bmcUser, wrong)
	env.CreateReadyNode("bad-pw")
	env.CreateInventory(framework.RedfishInventory("bad-pw", srv))
	env.Eventually(func() bool {
		return hasCondition(env, "bad-pw", equinixv1.BMCAuthenticated, metav1.ConditionFalse, equinixv1.ReasonAuthenticationFailed)
	}, time.Minute, "a wrong password was not reported")
	c := conditions.Get(env.Inventory("bad-pw").Status.Conditions, equinixv1.BMCAuthenticated)
	assert.Contains(t, c.Message, framework.BMCSecretNamespace+"/bad-pw")
	// Fixing the Secret is enough: its next read lifts the hold.
	setPassword(t, env, "bad-pw", bmcPassword)
	env.Eventually(func() bool {
		return ready(env, "bad-pw") && node(t, env, "bad-pw").Labels[equinixv1.LabelManufacturer] == "Supermicro"
	}, time.Minute, "the fixed password was not taken")

	env.CreateReadyNode("no-secret")
	missing := framework.RedfishInventory("no-secret", srv)
	env.CreateInventory(missing)
	env.Eventually(func() bool {
		return hasCondition(env, "no-secret", equinixv1.BMCCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonSecretNotFound) &&
			env.Inventory("no-secret").Status.Status == seederv1alpha1.InventoryCredentialsMissing
	}, time.Minute, "a missing Secret was not reported")
	assert.True(t, env.EventRecorded("no-secret", equinixv1.ReasonSecretNotFound))
	patchSpec(t, env, "no-secret", map[string]any{"baseboardSpec": map[string]any{"connection": map[string]any{
		"authSecretRef": map[string]any{"name": "bad-pw"}}}})
	env.Eventually(func() bool { return ready(env, "no-secret") }, time.Minute, "the Secret named later was not taken")

	// The UI names the node in an annotation too; one naming another node
	// is refused, and the BMC is not asked.
	quiet, quietSrv := redfishBMC(t)
	other := framework.RedfishInventory("other-node", quietSrv)
	other.Annotations = map[string]string{seederv1alpha1.AnnotationLocalNodeName: "node-9", seederv1alpha1.AnnotationLocalInventory: "true"}
	other.Spec.BaseboardManagementSpec.Connection.AuthSecretRef.Name = "bad-pw"
	env.CreateInventory(other)
	env.Eventually(func() bool {
		return hasCondition(env, "other-node", equinixv1.BMCNodeFound, metav1.ConditionFalse, equinixv1.ReasonNodeNameMismatch) &&
			env.Inventory("other-node").Status.Status == seederv1alpha1.InventoryNodeNameMismatch
	}, time.Minute, "an annotation naming another node was not refused")
	assert.True(t, env.EventRecorded("other-node", equinixv1.ReasonNodeNameMismatch))
	assert.Zero(t, quiet.Requests())

	// A node of the addon's own servers is its Instance's to describe.
	env.CreateReadyNode("owned")
	_, err := env.Kube.CoreV1().Nodes().Patch(env.Ctx, "owned", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"`+equinixv1.LabelInstance+`":"owned"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	owned := framework.RedfishInventory("owned", srv)
	owned.Spec.BaseboardManagementSpec.Connection.AuthSecretRef.Name = "bad-pw"
	env.CreateInventory(owned)
	env.Eventually(func() bool {
		return hasCondition(env, "owned", equinixv1.BMCNodeFound, metav1.ConditionFalse, equinixv1.ReasonNodeProvisioned)
	}, time.Minute, "an Inventory of the addon's own server was not refused")
	assert.Never(t, func() bool { return node(t, env, "owned").Labels[equinixv1.LabelManufacturer] != "" }, 2*time.Second,
		100*time.Millisecond, "the Inventory labelled an Instance's node")

	// A caBundle means that CA: a certificate another CA signed is
	// refused (without one, the first certificate is trusted on first use:
	// uidefaults_test.go); insecureTLS (the UI's checkbox) accepts it.
	env.CreateReadyNode("untrusted")
	untrusted := framework.RedfishInventory("untrusted", srv)
	untrusted.Spec.BaseboardManagementSpec.Connection.CABundle = string(quietSrv.CACertPEM)
	untrusted.Spec.BaseboardManagementSpec.Connection.AuthSecretRef.Name = "bad-pw"
	env.CreateInventory(untrusted)
	env.Eventually(func() bool {
		return hasCondition(env, "untrusted", equinixv1.BMCReachable, metav1.ConditionFalse, equinixv1.ReasonBMCCertificateInvalid) &&
			env.Inventory("untrusted").Status.Status == seederv1alpha1.InventoryBMCCertificateInvalid
	}, time.Minute, "an untrusted certificate was accepted")
	assert.True(t, env.EventRecorded("untrusted", equinixv1.ReasonBMCCertificateInvalid))
	patchSpec(t, env, "untrusted", map[string]any{"baseboardSpec": map[string]any{"connection": map[string]any{"insecureTLS": true, "caBundle": nil}}})
	env.Eventually(func() bool { return ready(env, "untrusted") }, time.Minute, "insecureTLS did not accept the certificate")

	// A Redfish port spoken to as IPMI.
	env.CreateReadyNode("wrong-protocol")
	env.CreateBMCSecret("wrong-protocol", bmcUser, ipmiPassword)
	env.CreateInventory(framework.IPMIInventory("wrong-protocol", srv.Host, srv.Port))
	env.Eventually(func() bool {
		return hasCondition(env, "wrong-protocol", equinixv1.BMCReachable, metav1.ConditionFalse, equinixv1.ReasonBMCProtocolMismatch) &&
			env.Inventory("wrong-protocol").Status.Status == seederv1alpha1.InventoryBMCProtocolMismatch
	}, time.Minute, "a BMC spoken to in the wrong protocol was not reported")

	// Outside harvester-system (the chart's admission policy refuses it; a
	// cluster without the policy lets it in): a condition and a Warning
	// Event, nothing else.
	elsewhere := framework.RedfishInventory("elsewhere", quietSrv)
	elsewhere.Namespace = "default"
	env.CreateInventory(elsewhere)
	env.Eventually(func() bool {
		inv, err := env.Client.MetalV1alpha1().Inventories("default").Get(env.Ctx, "elsewhere", metav1.GetOptions{})
		require.NoError(t, err)
		c := conditions.Get(inv.Status.Conditions, equinixv1.ConditionStalled)
		return inv.Status.Status == seederv1alpha1.InventoryWrongNamespace && c != nil && c.Status == metav1.ConditionTrue &&
			c.Reason == equinixv1.ReasonWrongNamespace && inv.Status.Hardware == nil
	}, time.Minute, "an Inventory outside harvester-system was not refused")
	assert.True(t, env.EventRecorded("elsewhere", equinixv1.ReasonWrongNamespace))
	assert.Zero(t, quiet.Requests(), "a refused Inventory's BMC was asked")
	env.AssertAbsent(bmcPassword, wrong)
}
