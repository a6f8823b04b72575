package ownedpools

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/nodedown"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// Harvester's own node-down controller (tests/nodedown) taints a pool's
// node out-of-service a couple of seconds after its kubelet went silent
// (period 1 s, vmMigrationTimeout 1 s here), without asking the BMC. That
// taint is no fence: the pool reads it against the BMC, as the fencer does.

// poolNodeTaintedByHarvester makes a one-server pool (nodeCleanupWaitInterval
// a minute: cycles due 20 s and 40 s into a NotReady spell, the replacement
// at 60 s), joins its node, silences its kubelet and waits for Harvester's
// out-of-service taint, which lands well before the first cycle is due.
func poolNodeTaintedByHarvester(t *testing.T, env *framework.Env, rack string, i int) (*server, equinixv1.Instance, string) {
	t.Helper()
	hd := nodedown.Start(t, env.Cluster)
	env.UseNodeDownPolicy(framework.NodeDownPolicy{Enable: true, Period: 1, VMMigrationTimeout: 1})
	s := addServer(t, env, "rack-"+rack+"-1", mac(i), map[string]string{"rack": rack})
	p := ownedPool("rack-"+rack, 1, map[string]string{"rack": rack})
	p.Spec.NodeCleanupWaitInterval = &metav1.Duration{Duration: time.Minute}
	createPool(t, env, p)
	inst := bootedInstance(t, env, "rack-"+rack)
	node := joinBound(t, env, s, &inst)

	setReady(t, env, node, corev1.ConditionUnknown, time.Now())
	require.Eventually(t, func() bool { return outOfServiceTaint(t, env, node) }, wait, tick,
		"Harvester's controller never tainted the node; its log:\n%s", hd.Log())
	return s, inst, node
}

// A pool's node Harvester tainted while its server still runs is not
// fenced: the pool power-cycles it as any unhealthy server (before, it took
// any out-of-service taint for a fence and left a running server under
// it), and says so; its replacement at the end of the interval switches
// the server off before it is released.
func TestHarvesterTaintedPoolNodeWithServerOnIsCycled(t *testing.T) {
	env := newEnv(t)
	s, inst, _ := poolNodeTaintedByHarvester(t, env, "hv", 120)
	require.Equal(t, "On", s.bmc.PowerState())
	before := len(s.bmc.PowerTransitions())

	require.Eventually(t, func() bool {
		got, err := env.Client.EquinixV1().Instances().Get(env.Ctx, inst.Name, metav1.GetOptions{})
		return err == nil && got.Status.PowerCycles >= 1 && len(s.bmc.PowerTransitions()) > before
	}, 2*wait, tick, "the running server under Harvester's taint was never power-cycled")
	assert.Equal(t, bmcsim.PowerChangeRestart, s.bmc.PowerTransitions()[before].Change)
	require.Eventually(t, func() bool {
		for _, e := range env.Events(inst.Name) {
			if e.Reason == equinixv1.ReasonPowerCycled && strings.Contains(e.Message, "tainted but not fenced") {
				return true
			}
		}
		return false
	}, wait, tick, "the cycle's Event does not say the node was tainted but not fenced")

	// The replacement releases the server: it is on, so it is switched off.
	require.Eventually(t, func() bool {
		for _, i := range instancesOf(t, env, "rack-hv") {
			if i.Name == inst.Name {
				return false
			}
		}
		return true
	}, 3*wait, tick, "the pool never replaced the server")
	ts := s.bmc.PowerTransitions()[before:]
	require.NotEmpty(t, ts)
	assert.Equal(t, bmcsim.PowerChangeOff, ts[len(ts)-1].Change, "the release did not switch the running server off: %+v", ts)
}

// A pool's node whose server is off under the taint (someone shut it down)
// keeps its power: no cycle switches it on while its VMs start elsewhere.
// (So it was before; the taint is now read against the BMC.)
func TestHarvesterTaintedPoolNodeWithServerOffIsLeftAlone(t *testing.T) {
	env := newEnv(t)
	s, inst, node := poolNodeTaintedByHarvester(t, env, "hw", 121)
	require.NoError(t, s.bmc.SetPowerState("Off"))
	before := len(s.bmc.PowerTransitions())

	require.Eventually(t, func() bool {
		got, err := env.Client.EquinixV1().Instances().Get(env.Ctx, inst.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		c := conditions.Get(got.Status.Conditions, equinixv1.InstanceReady)
		return c != nil && strings.Contains(c.Message, "it was shut down, so the pool does not power-cycle it")
	}, 2*wait, tick, "the pool never said it leaves the server off")
	got, err := env.Client.EquinixV1().Instances().Get(env.Ctx, inst.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Zero(t, got.Status.PowerCycles)
	assert.Len(t, s.bmc.PowerTransitions(), before, "the server under the taint was switched")
	assert.True(t, outOfServiceTaint(t, env, node))
}
