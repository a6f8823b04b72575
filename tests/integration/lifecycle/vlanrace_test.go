package lifecycle

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// Two servers of one hybrid pool reach the networking step together; both
// find VLAN 1000 missing and both create it. The slower create is refused
// (vxlan unique per project and metro) and must then use the VLAN the other
// one made, not wait out the 5-minute retry of an invalid request. The
// latency makes the overlap certain; without it a restart or a busy worker
// pool hits the same race now and then.
func TestConcurrentVLANCreatesDoNotStallNetworking(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	env.Sim.InjectFault(metalsim.Fault{
		Kind: metalsim.FaultLatency, Latency: time.Second,
		Operations: []string{metalsim.OpCreateVirtualNetwork},
	})
	insts := watchInstances(t, env)
	p := framework.ParsePool(t, framework.SeedSample, "vlan-race")
	p.Spec.Count = 2
	pool := env.CreatePool(p)

	env.WaitPoolReady(pool.Name, 2, time.Minute)
	var refused int
	for _, r := range env.Sim.RequestsFor(metalsim.OpCreateVirtualNetwork) {
		if r.Status == 422 {
			refused++
		}
	}
	t.Logf("VLAN creates refused as duplicates: %d", refused)
	stalled := insts.seen(func(i *equinixv1.Instance) bool {
		return i.Spec.PoolName == pool.Name && hasCondition(i, equinixv1.InstanceNetworkConfigured, metav1.ConditionFalse, equinixv1.ReasonInvalidRequest)
	})
	assert.Empty(t, stalled, "a server reported a duplicate VLAN create as an invalid request")
	env.AssertNoSecretLeaks()
}
