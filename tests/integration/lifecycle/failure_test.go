package lifecycle

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

func failedProvision(i *equinixv1.Instance) bool {
	return i.Status.Status == equinixv1.PhaseFailed && hasCondition(i, equinixv1.InstanceDeviceActive, metav1.ConditionFalse, equinixv1.ReasonProvisionFailed)
}

// A device that ends failed fails its Instance with a Warning; the pool
// replaces it with a new Instance and a new device, and the failed device is
// deleted, not leaked.
func TestFailedProvisionIsReplaced(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	l := newLedger(t, env)
	insts := watchInstances(t, env)
	fault := env.Sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultProvisionFailure, Count: 1})
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "fails-once"))

	env.WaitPoolReady(pool.Name, 1, 2*time.Minute)
	require.Equal(t, 1, env.Sim.FaultFired(fault))
	failed := insts.seen(func(i *equinixv1.Instance) bool { return i.Spec.PoolName == pool.Name && failedProvision(i) })
	require.NotEmpty(t, failed, "no Instance was seen failed")
	first := failed[0]
	assert.Equal(t, []string{first.Status.InstanceID}, l.failedDevices())
	assertWarning(t, env, first.Name, equinixv1.ReasonProvisionFailed)
	assert.True(t, env.EventRecorded(pool.Name, equinixv1.ReasonReplacing), "no Replacing Event on the pool")

	now := env.Instances(pool.Name)
	require.Len(t, now, 1)
	assert.NotEqual(t, first.Name, now[0].Name, "the failed Instance is still the pool's")
	assert.NotEqual(t, first.Status.InstanceID, now[0].Status.InstanceID)
	assert.Equal(t, []string{now[0].Status.InstanceID}, l.devicesOf(string(now[0].UID)))
	env.Eventually(func() bool { _, ok := env.Sim.Device(first.Status.InstanceID); return !ok }, 30*time.Second,
		"failed device %s was not deleted", first.Status.InstanceID)
	assert.Len(t, env.Sim.Devices(framework.ProjectID), 1)
	assert.Equal(t, 2, l.createdCount())
	env.AssertNoSecretLeaks()
}

// When every provision fails, the pool stops after maxProvisionAttempts
// servers, reports ProvisioningFailed and creates no more; editing its spec
// lets it try again, and the failed devices are all deleted in the end.
func TestMaxProvisionAttemptsStopsUntilSpecEdit(t *testing.T) {
	const attempts = 2
	env := framework.New(t, &shared, framework.Options{})
	l := newLedger(t, env)
	fault := env.Sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultProvisionFailure})
	p := framework.ParsePool(t, framework.SeedSample, "fails-always")
	p.Spec.Remediation.MaxProvisionAttempts = attempts
	pool := env.CreatePool(p)

	c := waitPoolCondition(t, env, pool.Name, equinixv1.PoolProvisioningFailed, metav1.ConditionTrue, "")
	assert.Contains(t, c.Message, "2 servers in a row failed")
	assertWarning(t, env, pool.Name, c.Reason)
	env.Eventually(func() bool { return env.Pool(pool.Name).Status.Status == equinixv1.PoolPhaseFailed }, 30*time.Second, "pool status is not failed")
	assert.Equal(t, attempts, l.createdCount())
	require.Never(t, func() bool { return l.createdCount() > attempts }, 3*time.Second, 100*time.Millisecond,
		"the pool kept creating devices after ProvisioningFailed")
	assert.Equal(t, attempts, len(env.Sim.RequestsFor(metalsim.OpCreateDevice)))
	// The last failed server stays for inspection, its device still owned.
	left := env.Instances(pool.Name)
	require.Len(t, left, 1)
	assert.Equal(t, equinixv1.PhaseFailed, left[0].Status.Status)

	env.Sim.RemoveFault(fault)
	env.EditPool(pool.Name, func(edited *equinixv1.InstancePool) {
		edited.Spec.Tags = append(edited.Spec.Tags, "retry=1")
	})

	env.WaitPoolReady(pool.Name, 1, 2*time.Minute)
	assert.Nil(t, poolCondition(env, pool.Name, equinixv1.PoolProvisioningFailed), "ProvisioningFailed stayed after the spec edit")
	assert.Equal(t, attempts+1, l.createdCount())
	env.Eventually(func() bool { return len(env.Sim.Devices(framework.ProjectID)) == 1 }, 30*time.Second, "failed devices were left behind")
	for _, id := range l.failedDevices() {
		_, ok := env.Sim.Device(id)
		assert.False(t, ok, "failed device %s leaked", id)
	}
	assert.Len(t, l.failedDevices(), attempts)
	var ev *corev1.Event
	for _, e := range env.Events(left[0].Name) {
		if e.Reason == equinixv1.ReasonProvisionFailed {
			ev = &e
		}
	}
	require.NotNil(t, ev, "no ProvisionFailed Event on %s", left[0].Name)
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	env.AssertNoSecretLeaks()
}

// Creates whose answer is lost (a 502 before the API stored anything) are
// never sent again for the same Instance: each Instance waits out the settle
// time (2 × --metal-timeout) for a device that might still land, then fails,
// and the pool replaces it. Such failures say nothing about the pool's
// template, so even maxProvisionAttempts=1 does not stop the pool.
func TestLostCreatesAreReplacedNotCounted(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{Configure: func(c *config.Config) { c.MetalTimeout = time.Second }})
	l := newLedger(t, env)
	insts := watchInstances(t, env)
	fault := env.Sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultServerError, Status: 502, Count: 2,
		Operations: []string{metalsim.OpCreateDevice}})
	p := framework.ParsePool(t, framework.SeedSample, "lost-creates")
	p.Spec.Remediation.MaxProvisionAttempts = 1
	pool := env.CreatePool(p)

	env.WaitPoolReady(pool.Name, 1, 2*time.Minute)
	require.Equal(t, 2, env.Sim.FaultFired(fault))
	assert.Nil(t, poolCondition(env, pool.Name, equinixv1.PoolProvisioningFailed), "lost creates counted as provisioning failures")
	gaveUp := insts.seen(func(i *equinixv1.Instance) bool {
		return i.Spec.PoolName == pool.Name && i.Status.Status == equinixv1.PhaseFailed && i.Status.InstanceID == ""
	})
	names := map[string]bool{}
	for _, i := range gaveUp {
		names[i.Name] = true
	}
	require.Len(t, names, 2, "each lost create should have failed its own Instance")
	for name := range names {
		assertWarning(t, env, name, "CreateUnconfirmed")
	}
	assert.Len(t, env.Sim.RequestsFor(metalsim.OpCreateDevice), 3, "creates sent (two lost, one answered)")
	assert.Equal(t, 1, l.createdCount())
	assert.Len(t, env.Sim.Devices(framework.ProjectID), 1)
	env.AssertNoSecretLeaks()
}
