package lifecycle

import (
	"sync"
	"testing"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/watch"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// killCtx is what a kill point acts on, and what it saw.
type killCtx struct {
	env   *framework.Env
	insts *instanceLog
	addon *framework.Addon
	pool  string
	// Set before the returned channel closes: whether the process died of
	// the SIGKILL (it was running), and the device transition that fired it.
	sigkilled bool
	cause     *metalsim.Notification
}

// killPoint arms a trigger that SIGKILLs the controller and returns a channel
// that closes once the process is dead.
type killPoint func(k *killCtx) <-chan struct{}

// onInstance kills at the first watch event of the pool's Instances that
// matches pred.
func onInstance(pred func(watch.EventType, *equinixv1.Instance) bool) killPoint {
	return func(k *killCtx) <-chan struct{} {
		return k.insts.on(func(typ watch.EventType, i *equinixv1.Instance) bool {
			return i.Spec.PoolName == k.pool && pred(typ, i)
		}, func(*equinixv1.Instance) { k.sigkilled = k.addon.Kill() })
	}
}

// onDevice kills inside the simulator's notification of the first device
// transition matching pred, that is before the request that caused it is
// answered: the controller never sees the answer.
func onDevice(pred func(metalsim.Notification) bool) killPoint {
	return func(k *killCtx) <-chan struct{} {
		done := make(chan struct{})
		var once sync.Once
		unsubscribe := k.env.Sim.Subscribe(func(n metalsim.Notification) {
			if !pred(n) {
				return
			}
			once.Do(func() {
				k.sigkilled = k.addon.Kill()
				k.cause = &n
				close(done)
			})
		})
		k.env.T.Cleanup(unsubscribe)
		return done
	}
}

func phaseIs(phase string) func(watch.EventType, *equinixv1.Instance) bool {
	return func(_ watch.EventType, i *equinixv1.Instance) bool { return i.Status.Status == phase }
}

// Killing the real binary with SIGKILL at each step of the provisioning chain
// and starting it again never gives an Instance a second device or a second
// reinstall: the finalizer, the tag lookup before every create, the install
// intent stored before the reinstall and the device's events carry the chain
// across the crash.
func TestSIGKILLAtEachStepNeverDuplicatesDevices(t *testing.T) {
	cases := []struct {
		name        string
		leaderElect bool
		kill        killPoint
		// adopts: the create's answer never arrives, so the restarted
		// controller must find the device by its tag.
		adopts bool
	}{
		{name: "instance-created", kill: onInstance(func(typ watch.EventType, _ *equinixv1.Instance) bool { return typ == watch.Added })},
		{name: "create-stored", adopts: true, kill: onDevice(func(n metalsim.Notification) bool { return n.Type == metalsim.DeviceCreated })},
		{name: "provisioning", kill: onInstance(phaseIs(equinixv1.PhaseProvisioning))},
		{name: "networking", kill: onDevice(func(n metalsim.Notification) bool {
			// The first port change of an active device: the networking chain
			// is mid-way to the install state, which comes before the reinstall.
			return n.Type == metalsim.DeviceNetworkChanged && n.State == metalv1.DEVICESTATE_ACTIVE
		})},
		{name: "reinstall-sent", kill: onDevice(func(n metalsim.Notification) bool {
			return n.Type == metalsim.DeviceStateChanged && n.State == metalv1.DEVICESTATE_REINSTALLING
		})},
		{name: "joining", kill: onInstance(phaseIs(equinixv1.PhaseJoining))},
		// With leader election the next process waits out the dead leader's
		// Lease, as a replacement pod does, and then adopts the lost create.
		{name: "create-stored-leader", leaderElect: true, adopts: true, kill: onDevice(func(n metalsim.Notification) bool { return n.Type == metalsim.DeviceCreated })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A slow install keeps the joining step open long enough to be hit.
			env := framework.New(t, &shared, framework.Options{NoController: true, InstallTime: 1500 * time.Millisecond})
			l := newLedger(t, env)
			insts := watchInstances(t, env)
			a := framework.StartAddon(t, env, framework.AddonOptions{LeaderElect: tc.leaderElect})

			k := &killCtx{env: env, insts: insts, addon: a, pool: "kill-" + tc.name}
			killed := tc.kill(k)
			p := framework.ParsePool(t, framework.SeedSample, k.pool)
			p.Spec.Count = 2
			pool := env.CreatePool(p)
			t.Cleanup(a.EnsureRunning)

			waitClosed(t, killed, 90*time.Second, "the kill point "+tc.name)
			require.True(t, k.sigkilled, "the controller was not running when the kill point was reached")
			a.Start()

			// A restarted leader first waits for the dead one's 30s Lease.
			env.WaitPoolReady(pool.Name, 2, 3*time.Minute)
			final := env.Instances(pool.Name)
			l.assertOneDevicePerInstance(t, env, final)
			assertNoWarnings(t, env, final)
			if tc.adopts {
				assertAdopted(t, env, final, k.cause)
			}
			a.AssertNoSecretLeaks()
			if t.Failed() {
				env.Dump(pool.Name)
			}
		})
	}
}

// A create whose answer is lost after Equinix stored it (the connection drops)
// is adopted by its tag on the next pass, never sent again.
func TestLostCreateIsAdoptedNotResent(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	l := newLedger(t, env)
	fault := env.Sim.InjectFault(metalsim.Fault{
		Kind: metalsim.FaultDropConnection, AfterStore: true,
		Operations: []string{metalsim.OpCreateDevice}, Count: 1,
	})
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "lost-create"))
	env.WaitPoolReady(pool.Name, 1, 90*time.Second)

	assert.Equal(t, 1, env.Sim.FaultFired(fault), "the create's answer was never dropped")
	creates := env.Sim.RequestsFor(metalsim.OpCreateDevice)
	require.Len(t, creates, 1, "the create was sent again")
	assert.True(t, creates[0].Dropped)

	insts := env.Instances(pool.Name)
	require.Len(t, insts, 1)
	inst := insts[0]
	assert.Equal(t, []string{inst.Status.InstanceID}, l.devicesOf(string(inst.UID)))
	assert.Len(t, env.Sim.Devices(framework.ProjectID), 1)
	c := framework.Condition(&inst, equinixv1.InstanceDeviceCreated)
	require.NotNil(t, c)
	assert.Equal(t, equinixv1.ReasonDeviceAdopted, c.Reason)
	assert.True(t, env.EventRecorded(inst.Name, equinixv1.ReasonDeviceAdopted), "no DeviceAdopted Event")
	env.AssertNoSecretLeaks()
}

// assertAdopted checks that the Instance whose create answer was cut found
// its device by tag rather than creating another.
func assertAdopted(t *testing.T, env *framework.Env, insts []equinixv1.Instance, cause *metalsim.Notification) {
	t.Helper()
	require.NotNil(t, cause)
	uid, ok := equinixv1.TagValue(cause.Tags, equinixv1.TagInstance)
	require.True(t, ok, "the device created carries no Instance tag")
	for _, inst := range insts {
		if string(inst.UID) != uid {
			continue
		}
		assert.Equal(t, cause.DeviceID, inst.Status.InstanceID)
		c := framework.Condition(&inst, equinixv1.InstanceDeviceCreated)
		if assert.NotNil(t, c) {
			assert.Equal(t, equinixv1.ReasonDeviceAdopted, c.Reason, "instance %s: %s", inst.Name, c.Message)
		}
		assert.True(t, env.EventRecorded(inst.Name, equinixv1.ReasonDeviceAdopted), "no DeviceAdopted Event on %s", inst.Name)
		return
	}
	t.Errorf("no Instance of the pool has UID %s, whose create was cut", uid)
}

// A reinstall whose answer is lost is asked about before it is sent again:
// one the API applied is recognised from the device's state or events, one it
// never received is sent once more. Either way the device is reinstalled once.
func TestLostReinstallAnswerReinstallsOnce(t *testing.T) {
	cases := []struct {
		name       string
		afterStore bool
		// requests is how many reinstalls reach the API in all.
		requests int
	}{
		{name: "applied", afterStore: true, requests: 1},
		{name: "never-applied", afterStore: false, requests: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := framework.New(t, &shared, framework.Options{})
			l := newLedger(t, env)
			fault := env.Sim.InjectFault(metalsim.Fault{
				Kind: metalsim.FaultDropConnection, AfterStore: tc.afterStore,
				Operations: []string{metalsim.OpPerformAction}, Count: 1,
			})
			pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "lost-reinstall-"+tc.name))
			env.WaitPoolReady(pool.Name, 1, 90*time.Second)

			assert.Equal(t, 1, env.Sim.FaultFired(fault))
			assert.Len(t, env.Sim.RequestsFor(metalsim.OpPerformAction), tc.requests)
			l.assertOneDevicePerInstance(t, env, env.Instances(pool.Name))
			env.AssertNoSecretLeaks()
		})
	}
}
