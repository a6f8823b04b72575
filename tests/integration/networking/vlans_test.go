package networking

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// A pool's VLAN list changes on the running server, without a reinstall:
// exactly the removed VLAN comes off and the added one goes on. Deleting the
// pool deletes the VLANs the addon created and no other, even one the pool
// used.
func TestVLANChangesInPlaceAndPoolRemovalKeepsForeignVLANs(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	// 1001 is the operator's and the seed pool uses it; 1500 is unrelated.
	createVLAN(t, env, metro, 1001, "operator VLAN used by the pool")
	createVLAN(t, env, metro, 1500, "operator VLAN nobody attaches")

	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "net-vlans"))
	env.WaitPoolReady(pool.Name, 1, 90*time.Second)
	inst := waitJoinedNetwork(t, env, pool.Name, equinixv1.NetworkTypeHybrid)
	assertVLANs(t, env, map[int]bool{1000: true, 1001: false, 1500: false})
	assert.Equal(t, []int{1000, 1001}, readDevice(t, env, inst.Status.InstanceID).Ports["eth1"].VXLANs)
	assertVLANEvents(t, env, inst.Name, "VLANCreated", "created VLAN 1000 in metro sg")

	env.Sim.ResetRequests()
	updatePool(t, env, pool.Name, func(p *equinixv1.InstancePool) {
		p.Spec.NetworkingConfiguration.InterfaceConfiguration[0].VLANIDs = []string{"1001", "1002"}
	})
	env.Eventually(func() bool {
		ns, err := env.Sim.DeviceNetwork(inst.Status.InstanceID)
		if err != nil {
			return false
		}
		eth1, _ := portState(ns, "eth1")
		return slices.Equal(ints32(eth1.VLANs), []int{1001, 1002})
	}, time.Minute, "eth1 did not take the pool's new VLAN list")
	settle(t, env)

	reqs := env.Sim.Requests()
	names := portNames(t, env, inst.Status.InstanceID)
	var calls []string
	for _, r := range portRequests(reqs) {
		calls = append(calls, portCall(r, names))
	}
	t.Logf("VLAN list change: %s", formatCounts(countByOperation(reqs)))
	assert.Equal(t, []string{"unassignPort eth1", "assignPort eth1"}, calls, "exactly the changed assignments")
	counts := countByOperation(reqs)
	for _, op := range []string{metalsim.OpPerformAction, metalsim.OpCreateDevice, metalsim.OpDeleteDevice, metalsim.OpUpdateDevice} {
		assert.Zero(t, counts[op], "%s during an in-place VLAN change", op)
	}
	after := onlyInstance(t, env, pool.Name)
	assert.Equal(t, inst.Name, after.Name, "the server was replaced")
	assert.Equal(t, inst.Status.InstanceID, after.Status.InstanceID)
	assert.True(t, env.EventRecorded(pool.Name, "VLANsChanged"))

	dev := readDevice(t, env, inst.Status.InstanceID)
	assert.Equal(t, []int{1001, 1002}, dev.Ports["eth1"].VXLANs)
	assert.False(t, dev.Ports["eth1"].Bonded)
	assert.Equal(t, corev1.ConditionTrue, nodeReady(t, env, inst.Name).Status)
	// 1000 was the addon's and nothing uses it any more.
	assertVLANs(t, env, map[int]bool{1001: false, 1002: true, 1500: false})

	env.DeletePoolAndWait(pool.Name)
	assertVLANs(t, env, map[int]bool{1001: false, 1500: false})
	vlans := projectVLANs(t, env, metro)
	assert.Equal(t, "operator VLAN used by the pool", vlans[1001].Description)
	assert.Equal(t, "operator VLAN nobody attaches", vlans[1500].Description)
	env.AssertNoSecretLeaks()
}

// assertVLANs checks the project's VLANs in the metro are exactly want's
// keys, and which of them carry the addon's cluster tag.
func assertVLANs(t *testing.T, env *framework.Env, want map[int]bool) {
	t.Helper()
	got := projectVLANs(t, env, metro)
	gotKeys := make([]int, 0, len(got))
	for vx := range got {
		gotKeys = append(gotKeys, vx)
	}
	wantKeys := make([]int, 0, len(want))
	for vx := range want {
		wantKeys = append(wantKeys, vx)
	}
	assert.ElementsMatch(t, wantKeys, gotKeys, "VLANs in metro %s", metro)
	for vx, addon := range want {
		v, ok := got[vx]
		if !ok {
			continue
		}
		tagged := slices.ContainsFunc(v.Tags, func(tag string) bool { return strings.HasPrefix(tag, equinixv1.TagCluster) })
		assert.Equal(t, addon, tagged, "VLAN %d carries the addon's tag: %v", vx, v.Tags)
	}
}

// assertVLANEvents checks the Instance's Events of reason are exactly msgs.
func assertVLANEvents(t *testing.T, env *framework.Env, inst, reason string, msgs ...string) {
	t.Helper()
	var got []string
	for _, ev := range env.Events(inst) {
		if ev.Reason == reason {
			got = append(got, ev.Message)
		}
	}
	require.ElementsMatch(t, msgs, got, "%s Events of %s", reason, inst)
}
