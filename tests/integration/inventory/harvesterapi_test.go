package inventory

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/harvesterapi"
)

// harvesterAPI runs Harvester's own node action handler on the test
// cluster, beside the controller in the hardware mode.
func harvesterAPI(t *testing.T, env *framework.Env) *harvesterapi.Server {
	t.Helper()
	harvesterapi.Binary(t)
	harvesterapi.InstallCRDs(env.Ctx, t, env.Cluster)
	return harvesterapi.Start(t, env.Cluster)
}

// answers polls one of Harvester's calls until it answers want (the
// handler reads the Addon, Inventory and Node from caches, which follow a
// change within moments) and returns that answer.
func answers(t *testing.T, want int, call func() (harvesterapi.Response, error)) harvesterapi.Response {
	t.Helper()
	var last harvesterapi.Response
	require.Eventually(t, func() bool {
		r, err := call()
		require.NoError(t, err)
		last = r
		return r.Status == want
	}, time.Minute, 100*time.Millisecond, "want %d, last answer %s", want, &last)
	return last
}

// Harvester's own node actions (pkg/api/node of the Harvester version
// go.mod pins) press the UI's power buttons against the controller:
// powerActionPossible answers 424 without the harvester-seeder Addon, with
// it disabled and without an Inventory, 409 quoting the controller's
// non-ready status while the BMC refuses the credentials, 204 once the
// controller made it ready; a second powerAction is refused (500) while the
// first has no actionStatus; outside maintenance mode a request ends failed
// with nothing sent; in maintenance each request is one command at the BMC,
// and the next is accepted once the last ended.
func TestHarvesterNodeActions(t *testing.T) {
	env := newEnv(t)
	api := harvesterAPI(t, env)
	sim, srv := redfishBMC(t)
	const name = "hv-node"
	env.CreateReadyNode(name)
	possible := func() (harvesterapi.Response, error) { return api.PowerActionPossible(env.Ctx, name) }
	action := func(op string) func() (harvesterapi.Response, error) {
		return func() (harvesterapi.Response, error) { return api.PowerAction(env.Ctx, name, op) }
	}

	harvesterapi.RemoveSeederAddon(env.Ctx, t, env.Cluster)
	answers(t, http.StatusFailedDependency, possible)
	harvesterapi.SetSeederAddon(env.Ctx, t, env.Cluster, false)
	t.Cleanup(func() { harvesterapi.RemoveSeederAddon(env.Ctx, t, env.Cluster) })
	answers(t, http.StatusFailedDependency, possible)
	harvesterapi.SetSeederAddon(env.Ctx, t, env.Cluster, true)
	answers(t, http.StatusFailedDependency, possible) // no Inventory

	env.CreateBMCSecret(name, bmcUser, "not-the-password")
	env.CreateInventory(framework.RedfishInventory(name, srv))
	answers(t, http.StatusConflict, possible)
	env.Eventually(func() bool {
		return env.Inventory(name).Status.Status == seederv1alpha1.InventoryBMCAuthenticationFailed
	}, time.Minute, "the refused credentials were not said in status.status")
	r := answers(t, http.StatusConflict, possible)
	assert.Contains(t, r.Body, "current status is: "+string(seederv1alpha1.InventoryBMCAuthenticationFailed))

	sec, err := env.Kube.CoreV1().Secrets(framework.BMCSecretNamespace).Get(env.Ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	sec.Data[seederv1alpha1.SecretPasswordKey] = []byte(bmcPassword)
	_, err = env.Kube.CoreV1().Secrets(framework.BMCSecretNamespace).Update(env.Ctx, sec, metav1.UpdateOptions{})
	require.NoError(t, err)
	answers(t, http.StatusNoContent, possible)

	// The first request: Harvester writes it without actionStatus, and
	// refuses another one until the controller ended it (with the
	// controller stopped, it stays so). The UI offers the buttons only in
	// maintenance mode; Harvester's API takes the request anyway, and the
	// controller refuses it.
	env.StopController()
	job := lastJob(env, name)
	answers(t, http.StatusNoContent, action(seederv1alpha1.PowerOperationShutdown))
	r, err = api.PowerAction(env.Ctx, name, seederv1alpha1.PowerOperationPowerOn)
	require.NoError(t, err)
	assert.Equal(t, http.StatusInternalServerError, r.Status, r.String())
	assert.Contains(t, r.Body, "waiting for power action status")
	restart(env)
	assert.Equal(t, seederv1alpha1.ActionStatusFailed, powerEnded(t, env, name, job))
	assert.Equal(t, seederv1alpha1.PowerOperationShutdown, env.Inventory(name).Status.PowerAction.LastActionRequested)
	assert.Never(t, func() bool { return len(sim.Resets()) > 0 }, 2*time.Second, 100*time.Millisecond,
		"a command went out without maintenance mode")

	env.SetMaintenance(name, true)
	job = lastJob(env, name)
	answers(t, http.StatusNoContent, action(seederv1alpha1.PowerOperationReboot))
	env.Eventually(func() bool { return len(sim.Resets()) == 1 }, time.Minute, "the reboot was not sent")
	assert.Equal(t, seederv1alpha1.ActionStatusComplete, powerEnded(t, env, name, job))
	assert.Equal(t, seederv1alpha1.PowerOperationReboot, env.Inventory(name).Status.PowerAction.LastActionRequested)
	assert.Equal(t, []string{"PowerCycle"}, sim.Resets())

	// Ended: the next request is accepted, and is one command again.
	job = lastJob(env, name)
	answers(t, http.StatusNoContent, action(seederv1alpha1.PowerOperationShutdown))
	env.Eventually(func() bool { return len(sim.Resets()) == 2 }, time.Minute, "the shutdown was not sent")
	assert.Equal(t, seederv1alpha1.ActionStatusComplete, powerEnded(t, env, name, job))
	assert.Equal(t, []string{"PowerCycle", "ForceOff"}, sim.Resets())
	assert.Never(t, func() bool { return len(sim.Resets()) != 2 }, 3*time.Second, 100*time.Millisecond,
		"a request was carried out twice")
	env.AssertAbsent(bmcPassword)
}
