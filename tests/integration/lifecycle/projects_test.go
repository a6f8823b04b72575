package lifecycle

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// A second project the operator's credentials can be switched to.
const (
	otherToken   = "sim-metal-token-other-5d1e"
	otherProject = "99999999-8888-7777-6666-555555555555"
)

func otherProjectData() map[string]string {
	return map[string]string{
		credentials.TokenKey: otherToken, credentials.ProjectKey: otherProject, "JOIN_TOKEN": framework.JoinToken,
	}
}

// Pointing the credentials Secret at another project never reads as "the
// device is gone": the server's Instance and its pool refuse to act, no
// server is made in the new project, and deleting the pool keeps the
// finalizer (and the billed device in the old project) until credentials
// of that project are back. Before, the cleanup got a 403 from the new
// project, found nothing by tag there, deleted the Node and let the
// finalizer go while the device ran on in the old project.
func TestProjectSwitchIsRefusedAndLeaksNothing(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	env.Sim.AddProject(otherToken, otherProject)
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "project-switch"))
	env.WaitPoolReady(pool.Name, 1, time.Minute)
	inst := env.Instances(pool.Name)[0]
	require.Equal(t, framework.ProjectID, inst.Status.ProjectID, "the project is recorded on the Instance")
	assert.Equal(t, "sg", inst.Status.Metro)
	device := inst.Status.InstanceID

	env.SetSecretData(otherProjectData())
	waitPoolCondition(t, env, pool.Name, equinixv1.PoolCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonProjectChanged)
	assertWarning(t, env, pool.Name, equinixv1.ReasonProjectChanged)

	// Delete the pool: the Instance's cleanup must refuse the new project.
	require.NoError(t, env.Client.EquinixV1().InstancePools().Delete(env.Ctx, pool.Name, metav1.DeleteOptions{}))
	got := waitInstanceCondition(t, env, pool.Name, equinixv1.InstanceCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonProjectMismatch)
	assert.Contains(t, framework.Condition(&got, equinixv1.InstanceCredentialsReady).Message, framework.ProjectID)
	assertWarning(t, env, got.Name, equinixv1.ReasonProjectMismatch)
	// The pass that refused is the one that used to do the harm; the next
	// waits for the Secret to change.
	dev, ok := env.Sim.Device(device)
	require.True(t, ok, "the device in the old project was deleted")
	assert.Equal(t, metal.DeviceStateActive, metal.DeviceState(dev.GetState()))
	_, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, got.Name, metav1.GetOptions{})
	assert.NoError(t, err, "the Node went while its device runs on")
	assert.Empty(t, env.Sim.Devices(otherProject), "a server was made in the new project")
	assert.Empty(t, env.Sim.RequestsFor(metalsim.OpDeleteDevice), "a device delete was sent")
	_, err = env.Client.EquinixV1().Instances().Get(env.Ctx, got.Name, metav1.GetOptions{})
	require.NoError(t, err, "the finalizer was released with the device still billed")

	// Credentials of the old project back: the cleanup finishes.
	env.SetSecretData(secretData(framework.MetalToken))
	env.Eventually(func() bool {
		_, err := env.Client.EquinixV1().InstancePools().Get(env.Ctx, pool.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, time.Minute, "the pool was not released once the old project's credentials were back")
	assert.Empty(t, env.Sim.Devices(framework.ProjectID))
	env.AssertNoSecretLeaks()
	env.AssertAbsent(otherToken)
}

// A Secret edited to name another project shows on every server made in the
// old one, joined servers included, from the cache and without a call on
// their devices; pointing such a server at a Secret of its own project
// clears it, and the pool creates again. Before, a joined server kept
// CredentialsReady=True (it makes no Metal call), and one that had reported
// the mismatch while it provisioned kept reporting it after its remedy: the
// operator had nothing to act on, and the pool held its creates for good.
func TestJoinedServersFollowTheirSecretsProject(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	env.Sim.AddProject(otherToken, otherProject)
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "project-follow"))
	env.WaitPoolReady(pool.Name, 1, time.Minute)
	device := env.Instances(pool.Name)[0].Status.InstanceID
	before := len(env.Sim.Requests())

	env.SetSecretData(otherProjectData())
	waitPoolCondition(t, env, pool.Name, equinixv1.PoolCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonProjectChanged)
	got := waitInstanceCondition(t, env, pool.Name, equinixv1.InstanceCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonProjectMismatch)
	assertWarning(t, env, got.Name, equinixv1.ReasonProjectMismatch)
	for _, req := range env.Sim.Requests()[before:] {
		assert.NotContains(t, req.Path, device, "the joined server's device was called to learn its project: %s %s", req.Method, req.Path)
	}

	// The operator's remedy the condition names: a Secret of the device's
	// project for that server.
	envApply(t, env, "project-follow-old", secretData(framework.MetalToken))
	patch := []byte(`{"spec":{"credentialsSecret":{"name":"project-follow-old"}}}`)
	_, err := env.Client.EquinixV1().Instances().Patch(env.Ctx, got.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
	waitInstanceCondition(t, env, pool.Name, equinixv1.InstanceCredentialsReady, metav1.ConditionTrue, equinixv1.ReasonCredentialsReady)
	waitPoolCondition(t, env, pool.Name, equinixv1.PoolCredentialsReady, metav1.ConditionTrue, "")

	// The pool creates again, in the project its Secret names now, and each
	// server is released with the credentials of its own project.
	scale(t, env, pool.Name, 2)
	env.WaitPoolReady(pool.Name, 2, 2*time.Minute)
	assert.Len(t, env.Sim.Devices(otherProject), 1, "the new server is not in the project the Secret names")
	env.DeletePoolAndWait(pool.Name)
	assert.Empty(t, env.Sim.Devices(framework.ProjectID))
	assert.Empty(t, env.Sim.Devices(otherProject))
	env.AssertNoSecretLeaks()
	env.AssertAbsent(otherToken)
}

// The sweep covers every project the ledger remembers, not only those of
// today's pools: after the default Secret moved to another project, a device
// left in the old one (a create that landed after its Instance was gone) and
// the addon's VLANs there are found with any labelled Secret of that
// project, and the ledger forgets the project once nothing is left in it.
func TestSweepCoversEveryRecordedProject(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{NoController: true})
	env.Sim.AddProject(otherToken, otherProject)
	env.StartController(env.Config(framework.Options{Configure: func(c *config.Config) {
		c.OrphanSweepInterval, c.OrphanGracePeriod, c.OrphanDryRun = 500*time.Millisecond, 0, false
	}}))
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "ledger"))
	env.WaitPoolReady(pool.Name, 1, time.Minute)
	env.DeletePoolAndWait(pool.Name)

	// Something of the addon is left in the old project, and the default
	// Secret now names another one; a labelled Secret of the old project
	// remains.
	clusterTag := clusterTagOf(t, env)
	old := env.MetalClient(framework.MetalToken, framework.ProjectID)
	orphan, err := old.CreateDevice(env.Ctx, metal.CreateDeviceRequest{
		Hostname: "ledger-late", Plan: "c3.small.x86", Metro: "sg", BillingCycle: "hourly",
		OperatingSystem: "custom_ipxe", IPXEScriptURL: "http://example.invalid/x.ipxe",
		Tags: []string{clusterTag, equinixv1.PoolTag("ledger")},
	})
	require.NoError(t, err)
	_, err = old.CreateVLAN(env.Ctx, metal.CreateVLANRequest{Metro: "sg", VXLAN: 1777, Tags: []string{clusterTag}})
	require.NoError(t, err)
	env.SetSecretData(otherProjectData())
	envApply(t, env, "old-project", secretData(framework.MetalToken))

	env.Eventually(func() bool {
		_, found := env.Sim.Device(orphan.ID)
		return !found
	}, time.Minute, "the orphan in the old project was not swept")
	env.Eventually(func() bool {
		vlans, err := old.ListVLANs(env.Ctx, "sg")
		return err == nil && len(vlans) == 0
	}, time.Minute, "the addon's VLAN in the old project was not swept")
	env.Eventually(func() bool {
		cm, err := env.Kube.CoreV1().ConfigMaps(framework.Namespace).Get(env.Ctx, equinixv1.ConfigMapLedger, metav1.GetOptions{})
		return err == nil && !containsKey(cm.Data["projects"], framework.ProjectID)
	}, time.Minute, "the ledger kept a project with nothing left in it")
	env.AssertNoSecretLeaks()
}

// A project the ledger remembers but no Secret names any more is reported,
// since what is left there can be neither found nor released.
func TestSweepReportsAProjectWithoutCredentials(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{NoController: true})
	env.Sim.AddProject(otherToken, otherProject)
	env.StartController(env.Config(framework.Options{Configure: func(c *config.Config) {
		c.OrphanSweepInterval = 500 * time.Millisecond
	}}))
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "ledger-lost"))
	env.WaitPoolReady(pool.Name, 1, time.Minute)
	env.DeletePoolAndWait(pool.Name)
	clusterTag := clusterTagOf(t, env)
	_, err := env.MetalClient(framework.MetalToken, framework.ProjectID).CreateDevice(env.Ctx, metal.CreateDeviceRequest{
		Hostname: "ledger-lost-late", Plan: "c3.small.x86", Metro: "sg", BillingCycle: "hourly",
		OperatingSystem: "custom_ipxe", IPXEScriptURL: "http://example.invalid/x.ipxe", Tags: []string{clusterTag},
	})
	require.NoError(t, err)
	env.SetSecretData(otherProjectData())
	env.Eventually(func() bool { return env.HasEvent(framework.Namespace, "ProjectUnreachable") }, time.Minute,
		"no ProjectUnreachable Event for the project no Secret names")
	env.SetSecretData(secretData(framework.MetalToken))
}

func envApply(t *testing.T, env *framework.Env, name string, data map[string]string) {
	t.Helper()
	raw := map[string][]byte{}
	for k, v := range data {
		raw[k] = []byte(v)
	}
	_, err := env.Kube.CoreV1().Secrets(framework.Namespace).Create(env.Ctx, framework.CredentialsSecret(name, raw), metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Secrets(framework.Namespace).Delete(env.Ctx, name, metav1.DeleteOptions{})
	})
}

// clusterTagOf reads the cluster tag the controller put on a device.
func clusterTagOf(t *testing.T, env *framework.Env) string {
	t.Helper()
	ns, err := env.Kube.CoreV1().Namespaces().Get(env.Ctx, "kube-system", metav1.GetOptions{})
	require.NoError(t, err)
	return equinixv1.ClusterTag(string(ns.UID))
}

func containsKey(doc, key string) bool { return strings.Contains(doc, `"`+key+`"`) }
