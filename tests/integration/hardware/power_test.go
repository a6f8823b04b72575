package hardware

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	hardwarev1 "github.com/harvester/harvester-equinix-addon/pkg/apis/hardware/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// A power-off of a joined server waits for its node's maintenance mode
// (a condition and a Warning Event say so, and nothing is sent), is carried
// out once in it, and leaves a server the pool neither counts as unhealthy
// nor replaces; switched on and rebooted, its node comes back Ready.
func TestPowerOffWaitsForMaintenanceThenOnAndReboot(t *testing.T) {
	env := newEnv(t, framework.Options{})
	pool, inst := readyServer(t, env, "power", func(p *equinixv1.InstancePool) {
		p.Spec.NodeCleanupWaitInterval = &metav1.Duration{Duration: time.Minute}
	})
	dev := inst.Status.InstanceID
	calls := func() int { return len(env.Sim.RequestsFor(metalsim.OpPerformAction)) }
	before := calls()

	patchSpec(t, env, inst.Name, map[string]any{"powerState": "off"})
	env.Eventually(func() bool {
		c := framework.Condition(instance(t, env, inst.Name), equinixv1.InstancePowerSynced)
		return c != nil && c.Reason == equinixv1.ReasonMaintenanceRequired
	}, time.Minute, "the power-off did not say it waits for maintenance mode")
	require.True(t, env.EventRecorded(inst.Name, equinixv1.ReasonMaintenanceRequired))
	for _, e := range env.Events(inst.Name) {
		if e.Reason == equinixv1.ReasonMaintenanceRequired {
			assert.Equal(t, "Warning", e.Type)
			assert.Contains(t, e.Message, "maintenance mode")
		}
	}
	assert.Never(t, func() bool { return calls() != before }, 3*time.Second, 100*time.Millisecond, "a power call went out without maintenance mode")
	la := instance(t, env, inst.Name).Status.LastPowerAction
	require.NotNil(t, la)
	assert.Equal(t, hardwarev1.PowerResultWaiting, la.Result)

	// The Harvester UI's Enable Maintenance Mode; the join agent plays
	// Harvester and completes it.
	annotateNode(t, env, inst.Name, harvester.AnnotationDrainRequested, "true")
	env.Eventually(func() bool {
		d, ok := env.Sim.Device(dev)
		return ok && d.GetState() == metalv1.DEVICESTATE_INACTIVE
	}, time.Minute, "the device was not switched off")
	env.Eventually(func() bool { return !nodeReady(node(t, env, inst.Name)) }, time.Minute, "the node stayed Ready")
	env.Eventually(func() bool {
		i := instance(t, env, inst.Name)
		p := env.Pool(pool.Name)
		return i.Status.Status == equinixv1.PhaseOff && i.Status.PowerState == string(equinixv1.PowerOff) &&
			i.Status.LastPowerAction.Result == hardwarev1.PowerResultSucceeded &&
			p.Status.PoweredOff == 1 && p.Status.Status == equinixv1.PoolPhaseReady
	}, time.Minute, "the Instance and the pool do not report the server off")
	assert.Equal(t, 1, powerEvents(t, env, dev, metalsim.EventPowerOff))
	assert.Equal(t, []string{"power", "off", "1"}, kubectl(t, "get", "instance", inst.Name, "-o", "custom-columns=POOL:.spec.poolName,POWER:.status.powerState,OFF:.status.lastPowerAction.attempts", "--no-headers"))
	wide := kubectl(t, "get", "instance", inst.Name, "-o", "wide")
	assert.Contains(t, wide, "off", "the Power column")

	// Off on request for longer than nodeCleanupWaitInterval: kept.
	assert.Never(t, func() bool {
		insts := env.Instances(pool.Name)
		return len(insts) != 1 || insts[0].Name != inst.Name || insts[0].DeletionTimestamp != nil
	}, 75*time.Second, time.Second, "the server switched off on request was replaced")
	p := env.Pool(pool.Name)
	assert.Zero(t, p.Status.ConsecutiveFailures)

	patchSpec(t, env, inst.Name, map[string]any{"powerState": "on"})
	env.Eventually(func() bool { return nodeReady(node(t, env, inst.Name)) }, time.Minute, "the node did not come back after the power-on")
	env.Eventually(func() bool {
		i := instance(t, env, inst.Name)
		return i.Status.Status == equinixv1.PhaseManaged && i.Status.LastPowerAction.Action == hardwarev1.PowerActionOn &&
			i.Status.LastPowerAction.Result == hardwarev1.PowerResultSucceeded
	}, time.Minute, "the power-on did not complete")
	assert.Equal(t, 1, powerEvents(t, env, dev, metalsim.EventPowerOn))

	patchSpec(t, env, inst.Name, map[string]any{"rebootRequestedAt": time.Now().UTC().Format(time.RFC3339)})
	env.Eventually(func() bool {
		la := instance(t, env, inst.Name).Status.LastPowerAction
		return la.Action == hardwarev1.PowerActionReboot && la.Result == hardwarev1.PowerResultSucceeded
	}, time.Minute, "the reboot did not complete")
	env.Eventually(func() bool {
		return nodeReady(node(t, env, inst.Name)) && powerEvents(t, env, dev, metalsim.EventReboot) == 1
	},
		time.Minute, "the node did not come back after the reboot")
	// The same time again is no new request.
	i := instance(t, env, inst.Name)
	patchSpec(t, env, inst.Name, map[string]any{"rebootRequestedAt": i.Spec.RebootRequestedAt.UTC().Format(time.RFC3339)})
	assert.Never(t, func() bool { return powerEvents(t, env, dev, metalsim.EventReboot) != 1 }, 2*time.Second, 100*time.Millisecond)
	assert.Len(t, env.Instances(pool.Name), 1)
	env.AssertNoSecretLeaks()
}

// Where Harvester reports maintenance through the node's MaintenanceMode
// condition, a power action goes only once it is True with reason
// Evacuating or Completed, not while the node still drains.
func TestMaintenanceModeConditionGatesPower(t *testing.T) {
	env := newEnv(t, framework.Options{NoMaintenanceEmulator: true})
	_, inst := readyServer(t, env, "power-cond", nil)
	calls := func() int { return len(env.Sim.RequestsFor(metalsim.OpPerformAction)) }
	before := calls()
	setMaintenance := func(reason string) {
		env.Eventually(func() bool {
			n := node(t, env, inst.Name)
			n = n.DeepCopy()
			found := false
			for i := range n.Status.Conditions {
				if n.Status.Conditions[i].Type == harvester.NodeConditionMaintenanceMode {
					n.Status.Conditions[i].Status, n.Status.Conditions[i].Reason, found = "True", reason, true
				}
			}
			if !found {
				n.Status.Conditions = append(n.Status.Conditions, corev1NodeCondition(reason))
			}
			_, err := env.Kube.CoreV1().Nodes().UpdateStatus(env.Ctx, n, metav1.UpdateOptions{})
			return err == nil
		}, 10*time.Second, "setting MaintenanceMode")
	}
	setMaintenance("Draining")
	patchSpec(t, env, inst.Name, map[string]any{"powerState": "off"})
	env.Eventually(func() bool {
		c := framework.Condition(instance(t, env, inst.Name), equinixv1.InstancePowerSynced)
		return c != nil && c.Reason == equinixv1.ReasonMaintenanceRequired && strings.Contains(c.Message, "Draining")
	}, time.Minute, "the power-off did not wait for the drain")
	assert.Never(t, func() bool { return calls() != before }, 2*time.Second, 100*time.Millisecond)
	setMaintenance(harvester.MaintenanceReasonEvacuating)
	env.Eventually(func() bool {
		return instance(t, env, inst.Name).Status.LastPowerAction.Result == hardwarev1.PowerResultSucceeded
	}, time.Minute, "the power-off did not go once the node was evacuating")
	assert.Equal(t, 1, powerEvents(t, env, inst.Status.InstanceID, metalsim.EventPowerOff))
}

// kubectl runs the real kubectl and returns its output's fields.
func kubectl(t *testing.T, args ...string) []string {
	t.Helper()
	c := shared.Require(t)
	out, err := exec.Command(filepath.Join(cluster.DefaultBinDir(), "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...).CombinedOutput()
	require.NoError(t, err, string(out))
	return strings.Fields(string(out))
}
