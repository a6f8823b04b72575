package lifecycle

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// createBackoff is the framework's --create-backoff.
const createBackoff = 2 * time.Second

// Creates refused for lack of capacity are sent no more than once per
// backoff step (2s, 4s, ...), and the pool says why it is not ready. Before,
// each refusal's status write re-ran the Instance at once: 1,446 creates in
// 15 s for one Instance.
func TestRefusedCreatesBackOffAndThePoolSaysWhy(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	env.Sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultNoCapacity, Operations: []string{metalsim.OpCreateDevice}})
	p := framework.ParsePool(t, framework.SeedSample, "no-capacity")
	pool := env.CreatePool(p)

	c := waitPoolCondition(t, env, pool.Name, equinixv1.PoolReady, metav1.ConditionFalse, "")
	env.Eventually(func() bool {
		c = poolCondition(env, pool.Name, equinixv1.PoolReady)
		return strings.Contains(c.Message, equinixv1.ReasonNoCapacity)
	}, 30*time.Second, "the pool does not say why it is not ready: %s", c.Message)
	assert.Contains(t, c.Message, "no capacity for plan c3.small.x86")

	// Three refusals take 2s + 4s; watch them come, then check the gaps.
	env.Eventually(func() bool { return len(env.Sim.RequestsFor(metalsim.OpCreateDevice)) >= 3 }, 30*time.Second,
		"the refused create was not retried")
	creates := env.Sim.RequestsFor(metalsim.OpCreateDevice)
	for i := 1; i < len(creates); i++ {
		gap := creates[i].Time.Sub(creates[i-1].Time)
		want := createBackoff << (i - 1)
		assert.GreaterOrEqual(t, gap, want, "refused create %d came %s after the one before; its backoff step is %s", i+1, gap, want)
	}
	inst := env.Instances(pool.Name)[0]
	require.NotNil(t, inst.Status.CreateRetry)
	assert.GreaterOrEqual(t, inst.Status.CreateRetry.Failures, int32(2))

	env.Sim.ClearFaults()
	env.WaitPoolReady(pool.Name, 1, time.Minute)
	assert.Nil(t, env.Instances(pool.Name)[0].Status.CreateRetry)
}

// The join configuration is cleared from the device's userdata once the
// node has joined, and userdataCleared is set only once the API took the
// update: a 503 is retried (paced) rather than forgotten with the token left
// in the userdata for the server's life.
func TestUserdataClearIsRetriedUntilItWorks(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	// The fault is armed by the simulator's delivering goroutine (one at a
	// time, so armed is its own) and removed by the test's: the channel
	// hands its ID over.
	armed, fault := false, make(chan metalsim.FaultID, 1)
	t.Cleanup(env.Sim.Subscribe(func(n metalsim.Notification) {
		// Once the installer runs, every later update fails: that is the
		// clearing one.
		if n.Type == metalsim.DeviceBooted && n.Boot != nil && n.Boot.Reason == metalsim.BootReinstall && !armed {
			armed = true
			fault <- env.Sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultServerError, Status: 503, Operations: []string{metalsim.OpUpdateDevice}})
		}
	}))
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "userdata-503"))
	inst := waitInstanceCondition(t, env, pool.Name, equinixv1.InstanceReady, metav1.ConditionTrue, "")
	env.Eventually(func() bool {
		i := instanceNamed(env, inst.Name)
		return i != nil && i.Status.UserdataClearRetry != nil && i.Status.UserdataClearRetry.Failures >= 2
	}, 30*time.Second, "the failed clear was not retried: %v", env.Sim.RequestsFor(metalsim.OpUpdateDevice))
	got := instanceNamed(env, inst.Name)
	assert.False(t, got.Status.UserdataCleared, "userdataCleared set though the update failed")
	assertWarning(t, env, inst.Name, "UserdataNotCleared")
	dev, _ := env.Sim.Device(got.Status.InstanceID)
	assert.NotEmpty(t, dev.GetUserdata(), "the simulator should still hold the join configuration")

	env.Sim.RemoveFault(<-fault)
	env.Eventually(func() bool {
		i := instanceNamed(env, inst.Name)
		return i != nil && i.Status.UserdataCleared && i.Status.UserdataClearRetry == nil
	}, 90*time.Second, "the userdata was never cleared")
	dev, _ = env.Sim.Device(got.Status.InstanceID)
	assert.Empty(t, dev.GetUserdata(), "the join configuration is still on the device")
	env.AssertNoSecretLeaks()
}

// A Secret that takes the name of an Instance's console-password Secret
// but is not the Instance's (no owner reference) is neither used nor
// deleted, no server is created while the name is taken, and the Instance
// says so. Before, it was adopted as the console password and deleted on
// cleanup.
func TestConsoleSecretNameClash(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	// Hold the chain before the console Secret is made, to take its name.
	require.NoError(t, env.Kube.CoreV1().Secrets(framework.Namespace).Delete(env.Ctx, framework.SecretName, metav1.DeleteOptions{}))
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "clash"))
	env.Eventually(func() bool { return len(env.Instances(pool.Name)) == 1 }, 30*time.Second, "no Instance")
	name := env.Instances(pool.Name)[0].Name
	foreign := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: framework.Namespace, Name: name + "-console"},
		Data:       map[string][]byte{"password": []byte("someone-elses-password")},
	}
	_, err := env.Kube.CoreV1().Secrets(framework.Namespace).Create(env.Ctx, foreign, metav1.CreateOptions{})
	require.NoError(t, err)
	env.SetSecretData(secretData(framework.MetalToken))

	inst := waitInstanceCondition(t, env, pool.Name, equinixv1.InstanceInstallConfigured, metav1.ConditionFalse, "PasswordSecretTaken")
	assert.Contains(t, framework.Condition(&inst, equinixv1.InstanceInstallConfigured).Message, name+"-console")
	assertWarning(t, env, inst.Name, "PasswordSecretTaken")
	assertNoMetalDevices(t, env)

	env.DeletePoolAndWait(pool.Name)
	kept, err := env.Kube.CoreV1().Secrets(framework.Namespace).Get(env.Ctx, name+"-console", metav1.GetOptions{})
	require.NoError(t, err, "the foreign Secret was deleted")
	assert.Equal(t, "someone-elses-password", string(kept.Data["password"]))
	require.NoError(t, env.Kube.CoreV1().Secrets(framework.Namespace).Delete(env.Ctx, name+"-console", metav1.DeleteOptions{}))
}

// A pool whose credentials never worked and that never sent a create is
// deleted at once: nothing was asked of Equinix Metal, so nothing needs
// credentials to be released. Before, it waited for valid credentials.
func TestNeverValidCredentialsLetThePoolGo(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{NoController: true})
	gate := &tokenGate{next: env.Sim.Handler(), used: map[string]int{}, revoked: map[string]bool{framework.MetalToken: true}}
	srv := httptest.NewServer(gate)
	t.Cleanup(srv.Close)
	env.StartController(env.Config(framework.Options{Configure: func(c *config.Config) { c.MetalAPIURL = srv.URL + "/metal/v1" }}))
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "never-valid"))
	waitInstanceCondition(t, env, pool.Name, equinixv1.InstanceCredentialsReady, metav1.ConditionFalse, equinixv1.ReasonCredentialsInvalid)

	require.NoError(t, env.Client.EquinixV1().InstancePools().Delete(env.Ctx, pool.Name, metav1.DeleteOptions{}))
	env.Eventually(func() bool {
		_, err := env.Client.EquinixV1().InstancePools().Get(env.Ctx, pool.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 30*time.Second, "a pool that never requested a device waited for valid credentials")
	assertNoMetalDevices(t, env)
}

// A Harvester version that was never released is refused before any paid
// server exists, on the pool and on its Instance. Before, it was accepted
// and failed only at the 45-minute startup timeout.
func TestUnreleasedVersionCreatesNoServer(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	p := framework.ParsePool(t, framework.SeedSample, "no-such-release")
	p.Spec.HarvesterVersion = "v9.9.9"
	pool := env.CreatePool(p)
	c := waitPoolCondition(t, env, pool.Name, equinixv1.PoolJoinInfoReady, metav1.ConditionFalse, equinixv1.ReasonReleaseNotFound)
	assert.Contains(t, c.Message, "v9.9.9")
	inst := waitInstanceCondition(t, env, pool.Name, equinixv1.InstanceInstallConfigured, metav1.ConditionFalse, equinixv1.ReasonReleaseNotFound)
	assertWarning(t, env, inst.Name, equinixv1.ReasonReleaseNotFound)
	assertNoMetalDevices(t, env)

	// A published release lets the same pool, and its Instance that has no
	// server yet, go on.
	env.EditPool(pool.Name, func(fixed *equinixv1.InstancePool) {
		fixed.Spec.HarvesterVersion = framework.HarvesterVersion
	})
	env.WaitPoolReady(pool.Name, 1, time.Minute)
}

func instanceNamed(env *framework.Env, name string) *equinixv1.Instance {
	i, err := env.Client.EquinixV1().Instances().Get(env.Ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return i
}

// An install disk the version's installer refuses (before v1.8.0, under 250
// GiB even with skipchecks) is refused before any paid server exists, on the
// pool and its Instance, from the plan's drives; pointing installDevice at a
// large enough drive lets the same pool go on.
func TestSmallInstallDiskCreatesNoServer(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	p := framework.ParsePool(t, framework.SeedSample, "small-disk")
	p.Spec.Plan = "c3.medium.x86" // 2 × 240GB boot SSDs, 2 × 480GB storage SSDs
	p.Spec.InstallDevice = "/dev/sda"
	pool := env.CreatePool(p)
	c := waitPoolCondition(t, env, pool.Name, equinixv1.PoolInstallDiskFits, metav1.ConditionFalse, equinixv1.ReasonInstallDiskTooSmall)
	assert.Contains(t, c.Message, "/dev/sda")
	assert.Contains(t, c.Message, "/dev/sdc", "the message names a drive that is large enough")
	inst := waitInstanceCondition(t, env, pool.Name, equinixv1.InstanceInstallConfigured, metav1.ConditionFalse, equinixv1.ReasonInstallDiskTooSmall)
	assertWarning(t, env, inst.Name, equinixv1.ReasonInstallDiskTooSmall)
	assertNoMetalDevices(t, env)

	env.EditPool(pool.Name, func(fixed *equinixv1.InstancePool) {
		fixed.Spec.InstallDevice = "/dev/sdc"
	})
	env.WaitPoolReady(pool.Name, 1, time.Minute)
	assert.Nil(t, conditions.Get(env.Pool(pool.Name).Status.Conditions, equinixv1.PoolInstallDiskFits), "the condition goes once no server reports it")
}
