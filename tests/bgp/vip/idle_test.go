package vip

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// The chains' cost at rest, measured: over a window of several resync
// intervals, with nothing changing, the VIP's ElasticIP reads its
// reservation once per interval and each BGP node lists its sessions once
// per interval, and nothing else is called. docs/cluster-vip.md states these
// figures at the default intervals.
func TestIdleMetalCost(t *testing.T) {
	const interval = 2 * time.Second
	const window = 5 * interval
	env := framework.New(t, &shared, inProcess(func(c *config.Config) {
		c.ElasticIPResync, c.BGP, c.BGPResync = interval, true, interval
	}))
	env.DeleteElasticIPsAtEnd()
	w := newWorld(t, env, "idle", 1)
	w.follow(w.first, time.Minute)
	for _, name := range append([]string{w.first}, w.servers...) {
		env.Eventually(func() bool { return nodeNamed(t, w, name).Annotations[equinixv1.AnnotationBGPDevice] != "" }, time.Minute,
			"node %s is not annotated", name)
	}
	// Let every chain reach its resting pace, then measure.
	env.Eventually(func() bool { return len(env.Agent.NodeNames()) == 1 }, time.Minute, "the joined node")
	env.Sim.ResetRequests()
	start := time.Now()
	assert.Never(t, func() bool {
		return len(env.Sim.Requests()) > 2*int(window/interval)*3
	}, window, 200*time.Millisecond, "the chains are not at rest")
	took := time.Since(start)
	perOp := map[string]int{}
	for _, r := range env.Sim.Requests() {
		perOp[r.Operation]++
	}
	var ops []string
	for op, n := range perOp {
		ops = append(ops, fmt.Sprintf("%s %d", op, n))
	}
	sort.Strings(ops)
	intervals := took.Seconds() / interval.Seconds()
	t.Logf("at rest over %s (%.1f resync intervals of %s): %s", took.Round(time.Millisecond), intervals, interval, strings.Join(ops, ", "))
	for op := range perOp {
		assert.Contains(t, []string{metalsim.OpFindIPAddressByID, metalsim.OpFindBgpSessions}, op, "no other call at rest")
	}
	// One reservation read per interval for the one ElasticIP, one session
	// list per interval for each of the two nodes; one more of each may
	// fall into a window that does not start on a tick.
	assert.LessOrEqual(t, float64(perOp[metalsim.OpFindIPAddressByID]), intervals+1)
	assert.LessOrEqual(t, float64(perOp[metalsim.OpFindBgpSessions]), 2*(intervals+1))
	// A read is due a whole interval after the last one, plus the time a
	// pass takes: a window may hold one fewer.
	assert.GreaterOrEqual(t, float64(perOp[metalsim.OpFindIPAddressByID]), math.Floor(intervals)-1, "the ElasticIP is checked")
}

// A LoadBalancer Service of an ElasticIPPool at rest: its ElasticIP reads
// its reservation once per resync interval, as the VIP's does, and the
// pool reads its block once per interval; nothing else is called.
// docs/cluster-vip.md states these figures at the default interval.
func TestIdleMetalCostOfALoadBalancerService(t *testing.T) {
	const interval = 2 * time.Second
	const window = 5 * interval
	env := framework.New(t, &shared, inProcess(func(c *config.Config) {
		c.ElasticIPResync, c.VIPElasticIP = interval, false
	}))
	env.DeleteElasticIPsAtEnd()
	w := newWorld(t, env, "idle-lb", 0)
	pool := env.WaitElasticIPPoolReady(env.CreateElasticIPPool("idle-lb", metro, 1).Name, time.Minute)
	address := framework.PoolAddress(pool, 0)
	ledger := env.WatchAddress(address)
	env.LoadBalancerService("default", "idle-lb", address)
	env.Eventually(func() bool { return env.SetServiceVIPHost("default", "idle-lb", w.first) == nil }, time.Minute, "naming the holder")
	w.elasticIPOn("idle-lb-"+dashed(address), w.first, ledger)

	env.Sim.ResetRequests()
	start := time.Now()
	assert.Never(t, func() bool { return len(env.Sim.Requests()) > 4*int(window/interval) }, window, 200*time.Millisecond,
		"the chain is not at rest")
	took := time.Since(start)
	perOp := map[string]int{}
	for _, r := range env.Sim.Requests() {
		perOp[r.Operation]++
	}
	intervals := took.Seconds() / interval.Seconds()
	t.Logf("a LoadBalancer Service and its pool at rest over %s (%.1f resync intervals of %s): %v calls, %.2f per interval",
		took.Round(time.Millisecond), intervals, interval, perOp, float64(len(env.Sim.Requests()))/intervals)
	for op := range perOp {
		assert.Equal(t, metalsim.OpFindIPAddressByID, op, "no other call at rest")
	}
	// The Service's ElasticIP and the pool: one reservation read each per
	// interval, one more each in a window that does not start on a tick.
	assert.LessOrEqual(t, float64(perOp[metalsim.OpFindIPAddressByID]), 2*(intervals+1))
	assert.GreaterOrEqual(t, float64(perOp[metalsim.OpFindIPAddressByID]), 2*(math.Floor(intervals)-1), "both are checked")
}
