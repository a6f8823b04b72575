package hardware

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// A spot server given a termination time goes into Harvester maintenance
// mode at once (a forced drain) and its successor is started while the
// device still exists, not after the sweep notices it gone.
func TestSpotTerminationStartsMaintenanceAndTheSuccessorFirst(t *testing.T) {
	// Nothing completes the maintenance, so the old device stays until the
	// platform takes it back: the successor must come before that.
	env := newEnv(t, framework.Options{NoMaintenanceEmulator: true})
	pool, inst := readyServer(t, env, "spot", func(p *equinixv1.InstancePool) {
		p.Spec.Spot = &equinixv1.SpotSettings{MaxPrice: "1.00"}
	})
	dev := inst.Status.InstanceID
	at := time.Now().Add(45 * time.Second).UTC().Truncate(time.Second)
	require.NoError(t, env.Sim.SetTerminationTime(dev, at))

	env.Eventually(func() bool {
		n := node(t, env, inst.Name)
		return harvester.MaintenanceRequested(n) && n.Annotations[harvester.AnnotationDrainForced] == "true"
	}, 20*time.Second, "the node was not put into maintenance mode")
	require.True(t, env.EventRecorded(inst.Name, equinixv1.ReasonReclaimScheduled))
	var successor string
	env.Eventually(func() bool {
		for _, i := range env.Instances(pool.Name) {
			if i.Name != inst.Name {
				successor = i.Name
			}
		}
		return successor != ""
	}, 20*time.Second, "no successor was started")
	_, exists := env.Sim.Device(dev)
	assert.True(t, exists, "the successor came only after the device was gone")
	assert.True(t, time.Now().Before(at), "the successor came only after the termination time")
	assert.True(t, env.EventRecorded(pool.Name, equinixv1.ReasonReclaimScheduled))

	// The platform takes the server back; its Instance goes, the successor
	// joins.
	env.Eventually(func() bool {
		insts := env.Instances(pool.Name)
		return len(insts) == 1 && insts[0].Name == successor && insts[0].Status.Status == equinixv1.PhaseManaged
	}, 2*time.Minute, "the pool did not settle on the successor")
	p := env.Pool(pool.Name)
	assert.Zero(t, p.Status.ConsecutiveFailures, "a reclaim is no failure of the pool's template")
	env.AssertNoSecretLeaks()
	// Harvester completes maintenance again, so that the pool's deletion
	// at the end does not wait out the maintenance timeout.
	go env.Agent.EmulateMaintenance(env.Ctx, 100*time.Millisecond)
}
