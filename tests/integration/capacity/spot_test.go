package capacity

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

func spotPool(t *testing.T, name string, count int32, maxPrice string) *equinixv1.InstancePool {
	p := layer3Pool(t, name, count)
	p.Spec.Spot = &equinixv1.SpotSettings{MaxPrice: maxPrice}
	return p
}

func setSpotMarket(t *testing.T, env *framework.Env, price float64, capacity *int) {
	t.Helper()
	require.NoError(t, env.Sim.SetSpotMarket(metalsim.SpotMarket{Metro: "sg", Plan: "c3.small.x86", Price: price, Capacity: capacity}))
}

// A spot pool makes spot devices bidding its max price; when the platform
// reclaims one (its termination time comes and the device goes), the pool
// replaces the server with another spot server.
func TestSpotPoolSurvivesAReclaim(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{Configure: func(c *config.Config) {
		c.OrphanSweepInterval = 300 * time.Millisecond
	}})
	setSpotMarket(t, env, 0.20, nil)
	pool := env.CreatePool(spotPool(t, "spot", 1, "0.50"))
	env.WaitPoolReady(pool.Name, 1, 2*time.Minute)
	first := env.Instances(pool.Name)[0]
	dev, ok := env.Sim.Device(first.Status.InstanceID)
	require.True(t, ok)
	assert.True(t, dev.GetSpotInstance(), "not a spot device")
	assert.InDelta(t, 0.50, dev.GetSpotPriceMax(), 1e-6, "the bid is not the pool's max price")

	require.NoError(t, env.Sim.SetTerminationTime(first.Status.InstanceID, env.Sim.Now()))
	env.Eventually(func() bool {
		_, exists := env.Sim.Device(first.Status.InstanceID)
		return !exists
	}, time.Minute, "the platform did not reclaim the device")
	env.Eventually(func() bool {
		insts := env.Instances(pool.Name)
		return len(insts) == 1 && insts[0].Name != first.Name && insts[0].Status.Status == equinixv1.PhaseManaged
	}, 2*time.Minute, "the reclaimed server was not replaced")
	env.WaitPoolReady(pool.Name, 1, time.Minute)
	next := env.Instances(pool.Name)[0]
	dev, ok = env.Sim.Device(next.Status.InstanceID)
	require.True(t, ok)
	assert.True(t, dev.GetSpotInstance(), "the replacement is not a spot device")
	assert.InDelta(t, 0.50, dev.GetSpotPriceMax(), 1e-6)
	assert.True(t, env.EventRecorded(pool.Name, equinixv1.ReasonReplacing))
	env.AssertNoSecretLeaks()
}

// When the spot market has no room for another server, the server waits and
// says so, and the pool says what its servers wait for; once the market has
// room, the pool fills up.
func TestSpotCapacityReported(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	one := 1
	setSpotMarket(t, env, 0.20, &one)
	pool := env.CreatePool(spotPool(t, "spot-full", 2, "0.50"))
	waiting := waitInstanceCondition(t, env, pool.Name, equinixv1.InstanceDeviceCreated, metav1.ConditionFalse, equinixv1.ReasonNoCapacity)
	msg := framework.Condition(&waiting, equinixv1.InstanceDeviceCreated).Message
	assert.Contains(t, msg, "no spot capacity for plan c3.small.x86 in metro SG at spot.maxPrice 0.50")
	assert.Contains(t, msg, "Spot market capacity for plan c3.small.x86 in metro sg is exhausted")
	assert.Contains(t, msg, "the next create is sent at")
	assert.True(t, env.EventRecorded(waiting.Name, equinixv1.ReasonNoCapacity), "no Warning Event on the Instance")
	env.Eventually(func() bool {
		c := poolCondition(env, pool.Name, equinixv1.PoolReady)
		return c != nil && strings.Contains(c.Message, "1 of 2 servers are managed") && strings.Contains(c.Message, "1 waiting on NoCapacity")
	}, time.Minute, "the pool does not say what its second server waits for")

	two := 2
	setSpotMarket(t, env, 0.20, &two)
	env.WaitPoolReady(pool.Name, 2, 2*time.Minute)
}

// A bid below the spot market price is refused, and the server says by how
// much.
func TestSpotBidBelowMarketReported(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	setSpotMarket(t, env, 0.20, nil)
	pool := env.CreatePool(spotPool(t, "spot-low", 1, "0.10"))
	inst := waitInstanceCondition(t, env, pool.Name, equinixv1.InstanceDeviceCreated, metav1.ConditionFalse, equinixv1.ReasonInvalidRequest)
	assert.Contains(t, framework.Condition(&inst, equinixv1.InstanceDeviceCreated).Message,
		"spot_price_max of 0.10 is below the current spot market price of 0.20")
	assert.Empty(t, env.Sim.Devices(framework.ProjectID))
}
