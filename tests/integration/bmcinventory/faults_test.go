package bmcinventory

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/simulator/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// A BMC that goes away, refuses the credentials for a while, or answers
// slower than the timeout gets a condition and an Event naming the
// problem, and the inventory recovers by itself once the BMC does (after
// a refusal, once the minute every refused login is held for is over).
func TestRedfishRecoversFromUnreachableUnauthorizedAndSlow(t *testing.T) {
	env := newEnv(t)
	sim, srv := redfishBMC(t)
	createNode(t, env, "rf-faults")
	bmcSecret(t, env, "rf-faults", bmcUser, bmcPassword)
	create(t, env, redfishInventory("rf-faults", "rf-faults", srv))
	reachable := func() bool {
		return hasCondition(t, env, "rf-faults", v1.BMCReachable, metav1.ConditionTrue, v1.ReasonBMCReachable) &&
			hasCondition(t, env, "rf-faults", v1.BMCAuthenticated, metav1.ConditionTrue, v1.ReasonAuthenticated)
	}
	env.Eventually(reachable, time.Minute, "the BMC was never reachable")

	if err := srv.GoAway(); err != nil {
		t.Fatal(err)
	}
	env.Eventually(func() bool {
		return hasCondition(t, env, "rf-faults", v1.BMCReachable, metav1.ConditionFalse, v1.ReasonBMCUnreachable)
	}, time.Minute, "an unreachable BMC was not reported")
	assert.True(t, env.EventRecorded("rf-faults", v1.ReasonBMCUnreachable))
	if err := srv.ComeBack(); err != nil {
		t.Fatal(err)
	}
	env.Eventually(reachable, time.Minute, "the inventory did not recover from an unreachable BMC")

	id := sim.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultUnauthorized})
	env.Eventually(func() bool {
		return hasCondition(t, env, "rf-faults", v1.BMCAuthenticated, metav1.ConditionFalse, v1.ReasonAuthenticationFailed)
	}, time.Minute, "a 401 was not reported")
	assert.True(t, env.EventRecorded("rf-faults", v1.ReasonAuthenticationFailed))
	refusedAt := sim.Requests()
	sim.RemoveFault(id)
	// A refused login is not tried again for a minute, whatever the poll
	// interval (BMCs lock accounts), so the recovery waits for that.
	assert.Never(t, func() bool { return sim.Requests() > refusedAt }, 5*time.Second, 100*time.Millisecond,
		"the BMC was asked again within the minute after it refused the credentials")
	env.Eventually(reachable, 2*time.Minute, "the inventory did not recover from a 401")

	id = sim.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultLatency, Latency: 3 * bmcTimeout})
	env.Eventually(func() bool {
		c := conditions.Get(inventory(t, env, "rf-faults").Status.Conditions, v1.BMCReachable)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "in time")
	}, time.Minute, "a slow BMC was not reported")
	sim.RemoveFault(id)
	env.Eventually(reachable, time.Minute, "the inventory did not recover from a slow BMC")
	env.AssertAbsent(bmcPassword)
}

// Bad input gets a condition and an Event naming it: a wrong password
// (until the Secret is fixed), a node that does not exist (until it does),
// a second inventory for one node, an untrusted certificate, and a BMC
// spoken to in the wrong protocol.
func TestBadInputIsNamed(t *testing.T) {
	env := newEnv(t)
	_, srv := redfishBMC(t)
	const wrong = "Wrong-pw-never-shown-77"
	bmcSecret(t, env, "bad-pw", bmcUser, wrong)
	createNode(t, env, "bad-pw")
	create(t, env, redfishInventory("bad-pw", "bad-pw", srv))
	env.Eventually(func() bool {
		return hasCondition(t, env, "bad-pw", v1.BMCAuthenticated, metav1.ConditionFalse, v1.ReasonAuthenticationFailed)
	}, time.Minute, "a wrong password was not reported")
	c := conditions.Get(inventory(t, env, "bad-pw").Status.Conditions, v1.BMCAuthenticated)
	assert.Contains(t, c.Message, framework.Namespace+"/bad-pw")
	// Fixing the Secret is enough.
	sec, err := env.Kube.CoreV1().Secrets(framework.Namespace).Get(env.Ctx, "bad-pw", metav1.GetOptions{})
	require.NoError(t, err)
	sec.Data["password"] = []byte(bmcPassword)
	_, err = env.Kube.CoreV1().Secrets(framework.Namespace).Update(env.Ctx, sec, metav1.UpdateOptions{})
	require.NoError(t, err)
	env.Eventually(func() bool {
		return hasCondition(t, env, "bad-pw", v1.BMCAuthenticated, metav1.ConditionTrue, v1.ReasonAuthenticated) &&
			node(t, env, "bad-pw").Labels[v1.LabelManufacturer] == "Supermicro"
	}, time.Minute, "the fixed password was not taken")

	bmcSecret(t, env, "late-node", bmcUser, bmcPassword)
	create(t, env, redfishInventory("late-node", "late-node", srv))
	env.Eventually(func() bool {
		return hasCondition(t, env, "late-node", v1.BMCNodeFound, metav1.ConditionFalse, v1.ReasonNodeNotFound)
	}, time.Minute, "a missing node was not reported")
	assert.True(t, env.EventRecorded("late-node", v1.ReasonNodeNotFound))
	createNode(t, env, "late-node")
	env.Eventually(func() bool {
		return hasCondition(t, env, "late-node", v1.BMCNodeFound, metav1.ConditionTrue, v1.ReasonNodeFound) &&
			node(t, env, "late-node").Labels[v1.LabelManufacturer] == "Supermicro"
	}, time.Minute, "the node that appeared did not get its facts")

	second := redfishInventory("late-node-again", "late-node", srv)
	second.Spec.CredentialsSecret.Name = "late-node"
	create(t, env, second)
	env.Eventually(func() bool {
		return hasCondition(t, env, "late-node-again", v1.BMCNodeFound, metav1.ConditionFalse, v1.ReasonDuplicateInventory)
	}, time.Minute, "a second inventory of one node was not refused")
	assert.True(t, env.EventRecorded("late-node-again", v1.ReasonDuplicateInventory))

	// IPMI passwords have at most 20 bytes.
	// A node of the addon's own servers is its Instance's to describe.
	bmcSecret(t, env, "owned", bmcUser, bmcPassword)
	createNode(t, env, "owned")
	_, err = env.Kube.CoreV1().Nodes().Patch(env.Ctx, "owned", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"`+v1.LabelInstance+`":"owned"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	create(t, env, redfishInventory("owned", "owned", srv))
	env.Eventually(func() bool {
		return hasCondition(t, env, "owned", v1.BMCNodeFound, metav1.ConditionFalse, v1.ReasonNodeProvisioned)
	}, time.Minute, "an inventory of the addon's own server was not refused")
	assert.Never(t, func() bool { return node(t, env, "owned").Labels[v1.LabelManufacturer] != "" }, 2*time.Second,
		100*time.Millisecond, "the inventory labelled an Instance's node")

	// TLS is verified by default: without the BMC's CA its self-signed
	// certificate is refused; accepting any is an explicit opt-in.
	bmcSecret(t, env, "untrusted", bmcUser, bmcPassword)
	createNode(t, env, "untrusted")
	untrusted := redfishInventory("untrusted", "untrusted", srv)
	untrusted.Spec.BMC.CABundle = ""
	create(t, env, untrusted)
	env.Eventually(func() bool {
		return hasCondition(t, env, "untrusted", v1.BMCReachable, metav1.ConditionFalse, v1.ReasonBMCCertificateInvalid)
	}, time.Minute, "an untrusted certificate was accepted")
	assert.True(t, env.EventRecorded("untrusted", v1.ReasonBMCCertificateInvalid))
	patchSpec(t, env, "untrusted", map[string]any{"bmc": map[string]any{"insecureSkipVerify": true}})
	env.Eventually(func() bool {
		return hasCondition(t, env, "untrusted", v1.BMCReachable, metav1.ConditionTrue, v1.ReasonBMCReachable)
	}, time.Minute, "insecureSkipVerify did not accept the certificate")

	bmcSecret(t, env, "wrong-protocol", bmcUser, ipmiPassword)
	createNode(t, env, "wrong-protocol")
	ipmi := redfishInventory("wrong-protocol", "wrong-protocol", srv)
	ipmi.Spec.BMC = v1.BMCEndpoint{Protocol: v1.BMCProtocolIPMI, Host: srv.Host, Port: int32(srv.Port)}
	create(t, env, ipmi)
	env.Eventually(func() bool {
		return hasCondition(t, env, "wrong-protocol", v1.BMCReachable, metav1.ConditionFalse, v1.ReasonBMCProtocolMismatch)
	}, time.Minute, "a BMC spoken to in the wrong protocol was not reported")
	env.AssertAbsent(bmcPassword, wrong)
}
