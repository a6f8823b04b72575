package inventory

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// A multi-node chassis's BMC lists its neighbours' systems beside this
// server's ("0" sorts first). Without systemID the Inventory says which
// systems it found and nothing is sent to any; with it, the server's
// system is the one read, and a slow BMC's timeout is taken.
func TestChassisBMCNeedsItsSystemNamed(t *testing.T) {
	env := newEnv(t)
	sim, srv := redfishBMCWith(t, bmcsim.Options{OtherSystems: []string{"0", "2"}})
	env.CreateBMCSecret("blade-1", bmcUser, bmcPassword)
	env.CreateReadyNode("blade-1")
	env.CreateInventory(framework.RedfishInventory("blade-1", srv))

	env.Eventually(func() bool {
		return hasCondition(env, "blade-1", equinixv1.BMCReachable, metav1.ConditionFalse, equinixv1.ReasonInvalidConfiguration)
	}, time.Minute, "a BMC with several systems was not reported")
	c := conditions.Get(env.Inventory("blade-1").Status.Conditions, equinixv1.BMCReachable)
	assert.Contains(t, c.Message, "lists 3 computer systems (0, 1, 2): set systemID")
	assert.True(t, env.EventRecorded("blade-1", equinixv1.ReasonInvalidConfiguration))
	assert.NotEqual(t, seederv1alpha1.InventoryNodeReady, env.Inventory("blade-1").Status.Status)
	assert.Empty(t, node(t, env, "blade-1").Labels[equinixv1.LabelManufacturer], "facts of an unknown system were written")

	patchSpec(t, env, "blade-1", map[string]any{"baseboardSpec": map[string]any{"connection": map[string]any{
		"systemID": "1", "timeout": "30s"}}})
	env.Eventually(func() bool {
		return ready(env, "blade-1") && node(t, env, "blade-1").Labels[equinixv1.LabelManufacturer] == "Supermicro"
	}, time.Minute, "the named system was not taken")
	assert.Empty(t, sim.Resets())
	assert.Empty(t, sim.OtherSystemResets())
}
