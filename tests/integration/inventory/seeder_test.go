package inventory

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// While Harvester's own Seeder is installed (its mark on the Inventory CRD)
// the controller leaves every Inventory untouched: no status, no BMC call;
// a Warning Event on the CRD and on each Inventory says why. Once the mark
// is gone, the Inventories are served.
func TestLeavesInventoriesToSeeder(t *testing.T) {
	env := newEnv(t)
	ext, err := apiextclient.NewForConfig(env.Cluster.RESTConfig)
	require.NoError(t, err)
	crds := ext.ApiextensionsV1().CustomResourceDefinitions()
	mark := func(on bool) {
		value := `"` + seederv1alpha1.SeederCRDOwnerID + `"`
		if !on {
			value = "null"
		}
		_, err := crds.Patch(env.Ctx, seederv1alpha1.InventoryCRDName, types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"`+seederv1alpha1.SeederCRDOwnerAnnotation+`":`+value+`}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	mark(true)
	t.Cleanup(func() { mark(false) })
	env.Eventually(func() bool { return env.HasEvent(seederv1alpha1.InventoryCRDName, equinixv1.ReasonSeederInstalled) }, time.Minute,
		"no Event on the CRD")
	env.Eventually(func() bool { return gauge(t, "equinix_addon_seeder_installed", "")[""] == 1 }, time.Minute, "the metric does not say Seeder is there")

	sim, srv := redfishBMC(t)
	env.CreateReadyNode("seeders")
	env.CreateBMCSecret("seeders", bmcUser, bmcPassword)
	env.CreateInventory(framework.RedfishInventory("seeders", srv))
	env.Eventually(func() bool { return env.HasEvent("seeders", equinixv1.ReasonSeederInstalled) }, time.Minute, "no Event on the Inventory")
	assert.Never(t, func() bool {
		inv := env.Inventory("seeders")
		return inv.Status.Status != "" || len(inv.Status.Conditions) > 0 || sim.Requests() > 0
	}, 3*time.Second, 100*time.Millisecond, "an Inventory was served beside Seeder")

	mark(false)
	env.Eventually(func() bool { return ready(env, "seeders") }, time.Minute, "the Inventory was not served once Seeder was gone")
	env.Eventually(func() bool { return gauge(t, "equinix_addon_seeder_installed", "")[""] == 0 }, time.Minute, "the metric still says Seeder is there")
}
