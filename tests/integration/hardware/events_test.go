package hardware

import (
	"fmt"
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

// Every event Equinix Metal records for a server becomes one Kubernetes
// Event, on the Instance before the node exists and on the Node after,
// across many polls, a clean restart and a SIGKILL of the real binary; and
// each poll is one project list however many servers there are.
func TestEachDeviceEventOnceAcrossPollsAndRestarts(t *testing.T) {
	env := newEnv(t, framework.Options{NoController: true})
	addon := framework.StartAddon(t, env, framework.AddonOptions{ExtraArgs: fastArgs})
	p := framework.SeedPoolWith(t, "events", "")
	p.Spec.Count = 2
	pool := env.CreatePool(p)
	env.WaitPoolReady(pool.Name, 2, 2*time.Minute)
	insts := env.Instances(pool.Name)

	var all []string
	for _, inst := range insts {
		all = append(all, deviceEventIDs(t, env, inst.Status.InstanceID)...)
	}
	allForwarded := func() bool {
		got := forwarded(t, env)
		for _, id := range all {
			if got[id] == 0 {
				return false
			}
		}
		return true
	}
	env.Eventually(allForwarded, time.Minute, "the provisioning events were not all forwarded")
	onInstance := 0
	list, err := env.Kube.CoreV1().Events("").List(env.Ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, e := range list.Items {
		if e.Annotations[equinixv1.AnnotationMachineEventID] != "" && e.InvolvedObject.Kind == "Instance" {
			onInstance++
		}
	}
	assert.Positive(t, onInstance, "events before the node existed go to the Instance")

	dev := insts[0].Status.InstanceID
	step := func(i int, typ string) {
		require.NoError(t, env.Sim.AddDeviceEvent(dev, typ, fmt.Sprintf("{{ device }} %s %d", typ, i)))
		all = deviceEventIDs(t, env, dev)
		for _, inst := range insts[1:] {
			all = append(all, deviceEventIDs(t, env, inst.Status.InstanceID)...)
		}
	}
	for i := range 3 {
		step(i, "test.poll")
		env.Eventually(allForwarded, time.Minute, "event %d was not forwarded", i)
	}
	addon.Stop()
	step(3, "test.while-stopped")
	addon.Start()
	env.Eventually(allForwarded, time.Minute, "the event recorded while the controller was stopped was not forwarded")
	require.NoError(t, env.Sim.AddMaintenanceEvent(dev, time.Now().Add(time.Hour), "switch firmware upgrade"))
	addon.Kill()
	step(4, "test.while-killed")
	addon.Start()
	env.Eventually(allForwarded, time.Minute, "the events recorded around the SIGKILL were not forwarded")

	// Several more polls pass: nothing comes twice.
	env.Sim.ResetRequests()
	env.Eventually(func() bool { return len(env.Sim.RequestsFor(metalsim.OpFindProjectEvents)) >= 4 }, time.Minute, "the log was not polled")
	for id, n := range forwarded(t, env) {
		assert.Equal(t, 1, n, "machine event %s forwarded %d times", id, n)
	}
	for _, r := range env.Sim.Requests() {
		assert.NotEqual(t, metalsim.OpFindDeviceEvents, r.Operation, "no per-device event list")
	}
	var warning *corev1.Event
	list, err = env.Kube.CoreV1().Events("").List(env.Ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + insts[0].Name})
	require.NoError(t, err)
	for i, e := range list.Items {
		if e.Reason == equinixv1.ReasonHardwareWarning {
			warning = &list.Items[i]
		}
	}
	require.NotNil(t, warning, "the maintenance notice is a Warning on the node")
	assert.Equal(t, "Node", warning.InvolvedObject.Kind)
	assert.Contains(t, warning.Message, "maintenance.scheduled")
	addon.AssertNoSecretLeaks()
}
