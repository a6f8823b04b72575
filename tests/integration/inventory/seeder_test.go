package inventory

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// While Harvester's own Seeder runs (its controller renews its Lease) the
// controller leaves every Inventory untouched: no status, no BMC call; a
// Warning Event on the CRD and on each Inventory says why. Once Seeder
// stops, the Inventories are served (tests/integration/seeder takes over
// what it leaves).
func TestLeavesInventoriesToSeeder(t *testing.T) {
	env := newEnv(t)
	stop := env.RunSeederLease()
	env.Eventually(func() bool { return env.HasEvent(seederv1alpha1.InventoryCRDName, equinixv1.ReasonSeederRunning) }, time.Minute,
		"no Event on the CRD")
	env.Eventually(func() bool { return gauge(t, "equinix_addon_seeder_running", "")[""] == 1 }, time.Minute, "the metric does not say Seeder runs")

	sim, srv := redfishBMC(t)
	env.CreateReadyNode("seeders")
	env.CreateBMCSecret("seeders", bmcUser, bmcPassword)
	env.CreateInventory(framework.RedfishInventory("seeders", srv))
	env.Eventually(func() bool { return env.HasEvent("seeders", equinixv1.ReasonSeederRunning) }, time.Minute, "no Event on the Inventory")
	assert.Never(t, func() bool {
		inv := env.Inventory("seeders")
		return inv.Status.Status != "" || len(inv.Status.Conditions) > 0 || sim.Requests() > 0
	}, 3*time.Second, 100*time.Millisecond, "an Inventory was served beside Seeder")

	stop()
	env.Eventually(func() bool { return ready(env, "seeders") }, 2*time.Minute, "the Inventory was not served once Seeder was gone")
	env.Eventually(func() bool { return gauge(t, "equinix_addon_seeder_running", "")[""] == 0 }, time.Minute, "the metric still says Seeder runs")
}
