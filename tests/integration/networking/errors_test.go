package networking

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// A port call the API refuses stops the chain with a NetworkConfigured
// condition naming the step and the port, is not hammered, and the chain
// finishes once the cause is gone.
func TestRefusedPortStepNamesStepAndPort(t *testing.T) {
	cases := []struct {
		name       string
		networking string
		typ        string
		op         string
		step       string
		// joined: the step runs after the join (a layer-2 conversion).
		joined bool
	}{
		{"VLAN assignment", framework.SeedHybrid, equinixv1.NetworkTypeHybrid, metalsim.OpAssignPort, "assign VLAN 1000 to eth1", false},
		{"disbond", framework.SeedHybrid, equinixv1.NetworkTypeHybrid, metalsim.OpDisbondPort, "disbond eth1", false},
		{"layer-2 conversion after the join", framework.SeedLayer2Bonded, equinixv1.NetworkTypeLayer2Bonded, metalsim.OpConvertLayer2, "convert-layer-2 on bond0", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := framework.New(t, &shared, framework.Options{})
			const refusal = "The port cannot take this change now (injected)"
			fault := env.Sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultServerError, Status: 422,
				Operations: []string{tc.op}, Message: refusal})
			pool := env.CreatePool(framework.SeedPoolWith(t, "net-refused", tc.networking))

			var inst equinixv1.Instance
			env.Eventually(func() bool {
				insts := env.Instances(pool.Name)
				if len(insts) != 1 {
					return false
				}
				inst = insts[0]
				c := framework.Condition(&inst, equinixv1.InstanceNetworkConfigured)
				return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, tc.step) && strings.Contains(c.Message, refusal)
			}, time.Minute, "no NetworkConfigured condition naming %q", tc.step)
			c := framework.Condition(&inst, equinixv1.InstanceNetworkConfigured)
			t.Logf("NetworkConfigured=%s %s: %s", c.Status, c.Reason, c.Message)
			env.Eventually(func() bool { return countWarnings(env, inst.Name, tc.step) > 0 }, 10*time.Second,
				"no Warning Event naming %q", tc.step)
			// Node heartbeats and the failure's own status write bring the
			// Instance back every second; none may send the refused call again
			// before its retry.
			assert.Never(t, func() bool { return len(env.Sim.RequestsFor(tc.op)) > 1 }, 3*time.Second, 100*time.Millisecond,
				"a refused %s was sent again before its retry", tc.op)
			assert.Equal(t, 1, countWarnings(env, inst.Name, tc.step), "Warning Events naming %q", tc.step)
			if tc.joined {
				// The install state keeps the management VLAN on bond0.
				assert.Equal(t, corev1.ConditionTrue, nodeReady(t, env, inst.Name).Status)
			} else {
				assert.Empty(t, env.Sim.RequestsFor(metalsim.OpPerformAction), "the installer must not start on unconverged ports")
				assert.Equal(t, equinixv1.PhaseNetworking, inst.Status.Status)
			}

			env.Sim.RemoveFault(fault)
			touchInstance(t, env, inst.Name)
			env.WaitPoolReady(pool.Name, 1, 90*time.Second)
			inst = waitJoinedNetwork(t, env, pool.Name, tc.typ)
			assertPorts(t, caseOf(t, tc.typ).ports, readDevice(t, env, inst.Status.InstanceID))
		})
	}
}

// 429s and 5xx on port calls are retried after the Retry-After the API asked
// for, without a failure condition, and the ports converge.
func TestThrottledPortCallsBackOffAndRecover(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	disbond429 := env.Sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultRateLimit, Operations: []string{metalsim.OpDisbondPort},
		Count: 1, RetryAfter: time.Second})
	assign429 := env.Sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultRateLimit, Operations: []string{metalsim.OpAssignPort},
		Count: 2, RetryAfter: time.Second})
	assign503 := env.Sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultServerError, Status: 503, Operations: []string{metalsim.OpAssignPort},
		Count: 1})
	pool := env.CreatePool(framework.SeedPoolWith(t, "net-throttled", framework.SeedHybrid))
	env.WaitPoolReady(pool.Name, 1, 90*time.Second)
	inst := waitJoinedNetwork(t, env, pool.Name, equinixv1.NetworkTypeHybrid)

	assert.Equal(t, 1, env.Sim.FaultFired(disbond429))
	assert.Equal(t, 2, env.Sim.FaultFired(assign429))
	assert.Equal(t, 1, env.Sim.FaultFired(assign503))
	for _, op := range []string{metalsim.OpDisbondPort, metalsim.OpAssignPort} {
		reqs := env.Sim.RequestsFor(op)
		for i, r := range reqs {
			if r.Status != 429 || i+1 == len(reqs) {
				continue
			}
			wait := reqs[i+1].Time.Sub(r.Time)
			assert.GreaterOrEqual(t, wait, 900*time.Millisecond, "%s retried %s after a 429 asking for 1s", op, wait)
		}
	}
	assert.Len(t, env.Sim.RequestsFor(metalsim.OpDisbondPort), 2, "disbond: one 429, one success")
	assert.Len(t, env.Sim.RequestsFor(metalsim.OpAssignPort), 5, "assign: two 429s, one 503, two successes")
	assert.Zero(t, countWarnings(env, inst.Name, "eth1"), "a throttled port call is no failure to warn about")
	assertPorts(t, caseOf(t, equinixv1.NetworkTypeHybrid).ports, readDevice(t, env, inst.Status.InstanceID))
	require.Equal(t, corev1.ConditionTrue, nodeReady(t, env, inst.Name).Status)
}

// countWarnings counts the Warning Events about name that mention substr.
func countWarnings(env *framework.Env, name, substr string) int {
	n := 0
	for _, ev := range env.Events(name) {
		if ev.Type == corev1.EventTypeWarning && strings.Contains(ev.Message, substr) {
			n += int(max(ev.Count, 1))
		}
	}
	return n
}
