package ownedpools

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// Scale up claims one free server per Instance, sets its one-time network
// boot and powers it on, each once; the Node joining makes it managed.
// Scale down powers it off and frees its Inventory.
func TestScaleUpClaimsBootsAndScaleDownReleases(t *testing.T) {
	env := newEnv(t)
	s := addServer(t, env, "rack-a-1", mac(1), map[string]string{"rack": "a"})
	createPool(t, env, ownedPool("rack-a", 1, map[string]string{"rack": "a"}))

	var inst equinixv1.Instance
	defer func() {
		if t.Failed() {
			for _, i := range instancesOf(t, env, "rack-a") {
				t.Logf("instance %s: finalizers %v deletion %v status %+v", i.Name, i.Finalizers, i.DeletionTimestamp, i.Status)
			}
		}
	}()
	require.Eventually(t, func() bool {
		insts := instancesOf(t, env, "rack-a")
		if len(insts) != 1 || insts[0].Status.Server != s.name {
			return false
		}
		inst = insts[0]
		return inst.Status.InstallRequestedAt != nil
	}, wait, tick, "the pool never claimed and booted its server")
	inv := env.Inventory(s.name)
	assert.Equal(t, inst.Name, inv.Labels[equinixv1.LabelClaimedBy])
	assert.Equal(t, string(inst.UID), inv.Annotations[equinixv1.AnnotationClaimUID])
	boots, ts := s.networkBoots()
	assert.Equal(t, 1, boots, "one start from the network: %+v", ts)
	// The first transition is the test switching the server off.
	require.Len(t, ts, 2, "one power command: %+v", ts)
	assert.Equal(t, bmcsim.PowerChangeOn, ts[1].Change)

	node := env.JoinOwnedServer(&inst)
	require.Eventually(t, func() bool {
		got, err := env.Client.EquinixV1().Instances().Get(env.Ctx, inst.Name, metav1.GetOptions{})
		return err == nil && got.Status.Status == equinixv1.PhaseManaged && got.Status.JoinedAt != nil && got.Status.NodeName == node
	}, wait, tick, "the Instance never saw its Node join")
	_, ts = s.networkBoots()
	assert.Len(t, ts, 2, "nothing more was asked of the BMC: %+v", ts)

	scale(t, env, "rack-a", 0)
	require.Eventually(t, func() bool {
		return len(instancesOf(t, env, "rack-a")) == 0
	}, wait, tick, "the Instance was never released")
	assert.Equal(t, "Off", s.bmc.PowerState())
	inv = env.Inventory(s.name)
	assert.NotContains(t, inv.Labels, equinixv1.LabelClaimedBy)
	assert.NotContains(t, inv.Annotations, equinixv1.AnnotationClaimUID)
	_, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, node, metav1.GetOptions{})
	assert.Error(t, err, "the Node is deleted")
}

// With fewer free servers than count, the pool claims what there is, says
// so, and creates nothing twice.
func TestNoFreeServerIsReportedAndWaited(t *testing.T) {
	env := newEnv(t)
	addServer(t, env, "rack-b-1", mac(2), map[string]string{"rack": "b"})
	createPool(t, env, ownedPool("rack-b", 2, map[string]string{"rack": "b"}))

	require.Eventually(t, func() bool {
		p, err := env.Client.EquinixV1().InstancePools().Get(env.Ctx, "rack-b", metav1.GetOptions{})
		if err != nil {
			return false
		}
		c := conditions.Get(p.Status.Conditions, equinixv1.PoolServersAvailable)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == equinixv1.ReasonNoFreeServer
	}, wait, tick, "the pool never said it lacks a server")
	assert.Len(t, instancesOf(t, env, "rack-b"), 2)
	assert.Len(t, claims(t, env), 1)

	// A second server frees the waiting Instance.
	addServer(t, env, "rack-b-2", mac(3), map[string]string{"rack": "b"})
	require.Eventually(t, func() bool {
		return len(claims(t, env)) == 2
	}, wait, tick, "the waiting Instance never claimed the new server")
	assert.Len(t, instancesOf(t, env, "rack-b"), 2)
}

// Two pools selecting the same servers never claim one twice.
func TestTwoPoolsOneSelectorNeverClaimOneServerTwice(t *testing.T) {
	env := newEnv(t)
	for i := 1; i <= 3; i++ {
		addServer(t, env, "shared-"+string(rune('0'+i)), mac(10+i), map[string]string{"rack": "c"})
	}
	createPool(t, env, ownedPool("left", 2, map[string]string{"rack": "c"}))
	createPool(t, env, ownedPool("right", 2, map[string]string{"rack": "c"}))
	// An Instance labels its server before it writes the server into its
	// status, and the pools make their Instances one pass at a time, so the
	// settled picture (three claims, four Instances, one of them waiting) is
	// waited for; no sample on the way may show a server claimed twice.
	require.Eventually(t, func() bool {
		held := claims(t, env)
		for inst, invs := range held {
			assert.Len(t, invs, 1, "Instance %s holds %v", inst, invs)
		}
		instances, waiting := 0, 0
		for _, pool := range []string{"left", "right"} {
			for _, i := range instancesOf(t, env, pool) {
				instances++
				if i.Status.Server == "" {
					waiting++
				}
			}
		}
		return len(held) == 3 && instances == 4 && waiting == 1
	}, wait, tick, "the pools never settled on three claimed servers and one waiting Instance")
}

// The equinix mode leaves a pool of servers people own alone: no
// finalizer, no status, no Instance, while it runs a Metal pool made after
// it.
func TestEquinixModeLeavesOwnedPoolsAlone(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	createPool(t, env, ownedPool("not-metal", 1, map[string]string{"rack": "z"}))
	metal := framework.ParsePool(t, framework.SeedSample, "metal-beside")
	metal.Spec.Count = 0
	createPool(t, env, metal)
	require.Eventually(t, func() bool {
		p, err := env.Client.EquinixV1().InstancePools().Get(env.Ctx, metal.Name, metav1.GetOptions{})
		return err == nil && len(p.Finalizers) > 0 && p.Status.Status != ""
	}, wait, tick, "the equinix mode never ran its Metal pool")
	p, err := env.Client.EquinixV1().InstancePools().Get(env.Ctx, "not-metal", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, p.Finalizers)
	assert.Empty(t, p.Status.Status)
	assert.Empty(t, instancesOf(t, env, "not-metal"))
}

// A rollout of servers people own surges only onto free servers: with none
// free, no surge Instance is made and the old server stays; a free server
// lets the rollout go on.
func TestRolloutSurgesOnlyOntoFreeServers(t *testing.T) {
	env := newEnv(t)
	old := addServer(t, env, "rack-s-1", mac(80), map[string]string{"rack": "s"})
	createPool(t, env, ownedPool("rack-s", 1, map[string]string{"rack": "s"}))
	var first equinixv1.Instance
	require.Eventually(t, func() bool {
		insts := instancesOf(t, env, "rack-s")
		if len(insts) != 1 || insts[0].Status.Server != old.name {
			return false
		}
		first = insts[0]
		return true
	}, wait, tick)
	env.JoinOwnedServer(&first)

	// A new selector no free server matches: the pool takes the new
	// generation and makes no surge.
	var gen int64
	require.Eventually(t, func() bool {
		p, err := env.Client.EquinixV1().InstancePools().Get(env.Ctx, "rack-s", metav1.GetOptions{})
		if err != nil {
			return false
		}
		p.Spec.Servers.Selector.MatchLabels = map[string]string{"rack": "s", "gen": "2"}
		u, err := env.Client.EquinixV1().InstancePools().Update(env.Ctx, p, metav1.UpdateOptions{})
		if err == nil {
			gen = u.Generation
		}
		return err == nil
	}, wait, tick)
	require.Eventually(t, func() bool {
		p, err := env.Client.EquinixV1().InstancePools().Get(env.Ctx, "rack-s", metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration == gen
	}, wait, tick)
	assert.Len(t, instancesOf(t, env, "rack-s"), 1, "no surge without a free server")

	// A free server of the new selector: the surge claims it.
	addServer(t, env, "rack-s-2", mac(81), map[string]string{"rack": "s", "gen": "2"})
	require.Eventually(t, func() bool {
		for _, i := range instancesOf(t, env, "rack-s") {
			if i.Status.Server == "rack-s-2" {
				return true
			}
		}
		return false
	}, wait, tick, "the rollout never surged onto the free server")
}

// A joined server whose node stays not Ready is power-cycled through its
// BMC before the pool would replace it, counted in its status; a Ready node
// again resets the count.
func TestUnhealthyServerIsPowerCycledFirst(t *testing.T) {
	env := newEnv(t)
	s := addServer(t, env, "rack-u-1", mac(90), map[string]string{"rack": "u"})
	p := ownedPool("rack-u", 1, map[string]string{"rack": "u"})
	p.Spec.NodeCleanupWaitInterval = &metav1.Duration{Duration: time.Minute}
	createPool(t, env, p)
	var inst equinixv1.Instance
	require.Eventually(t, func() bool {
		insts := instancesOf(t, env, "rack-u")
		if len(insts) != 1 || insts[0].Status.InstallRequestedAt == nil {
			return false
		}
		inst = insts[0]
		return true
	}, wait, tick)
	node := env.JoinOwnedServer(&inst)
	require.Eventually(t, func() bool {
		got, err := env.Client.EquinixV1().Instances().Get(env.Ctx, inst.Name, metav1.GetOptions{})
		return err == nil && got.Status.Status == equinixv1.PhaseManaged
	}, wait, tick)
	before := len(s.bmc.PowerTransitions())

	// Not Ready for half a minute already: the first of two cycles (at a
	// third of the minute) is due.
	// The cycle is counted in the status before it is sent (its intent),
	// so the BMC's side of it is waited for too.
	setReady(t, env, node, corev1.ConditionFalse, time.Now().Add(-30*time.Second))
	require.Eventually(t, func() bool {
		got, err := env.Client.EquinixV1().Instances().Get(env.Ctx, inst.Name, metav1.GetOptions{})
		return err == nil && got.Status.PowerCycles == 1 && len(s.bmc.PowerTransitions()) > before
	}, wait, tick, "the unhealthy server was never power-cycled")
	ts := s.bmc.PowerTransitions()[before:]
	require.Len(t, ts, 1, "one cycle: %+v", ts)
	assert.Equal(t, bmcsim.PowerChangeRestart, ts[0].Change)

	setReady(t, env, node, corev1.ConditionTrue, time.Now())
	require.Eventually(t, func() bool {
		got, err := env.Client.EquinixV1().Instances().Get(env.Ctx, inst.Name, metav1.GetOptions{})
		return err == nil && got.Status.Status == equinixv1.PhaseManaged && got.Status.PowerCycles == 0
	}, wait, tick, "the count never went back to zero")
	assert.Len(t, instancesOf(t, env, "rack-u"), 1, "nothing was replaced")
}

// Without the join token a server booted now could never join: the
// Instance claims and boots nothing, says what is missing, and goes on
// once the token is in the Secret.
func TestNoServerIsBootedBeforeTheJoinTokenIsThere(t *testing.T) {
	opts := hardwareOpts()
	opts.NoJoinToken = true
	env := framework.New(t, &shared, opts)
	s := addServer(t, env, "rack-j-1", mac(9), map[string]string{"rack": "j"})
	createPool(t, env, ownedPool("rack-j", 1, map[string]string{"rack": "j"}))

	var inst equinixv1.Instance
	require.Eventually(t, func() bool {
		insts := instancesOf(t, env, "rack-j")
		if len(insts) != 1 {
			return false
		}
		inst = insts[0]
		c := conditions.Get(inst.Status.Conditions, equinixv1.InstanceInstallConfigured)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == equinixv1.ReasonJoinTokenMissing
	}, wait, tick, "the Instance never said the join token is missing")
	assert.Equal(t, equinixv1.PhasePending, inst.Status.Status)
	assert.Empty(t, inst.Status.Server)
	assert.Nil(t, inst.Status.NetworkBootRequestedAt)
	assert.Empty(t, claims(t, env), "no server is claimed")
	boots, ts := s.networkBoots()
	assert.Zero(t, boots)
	assert.Len(t, ts, 1, "nothing but the test's own power off: %+v", ts)

	sec, err := env.Kube.CoreV1().Secrets(framework.Namespace).Get(env.Ctx, framework.SecretName, metav1.GetOptions{})
	require.NoError(t, err)
	sec.Data["JOIN_TOKEN"] = []byte(framework.JoinToken)
	_, err = env.Kube.CoreV1().Secrets(framework.Namespace).Update(env.Ctx, sec, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		insts := instancesOf(t, env, "rack-j")
		if len(insts) != 1 {
			return false
		}
		inst = insts[0]
		return inst.Status.Server == s.name && inst.Status.InstallRequestedAt != nil
	}, wait, tick, "the Instance never booted its server once the token was there")
	assert.Nil(t, conditions.Get(inst.Status.Conditions, equinixv1.InstanceInstallConfigured), "the condition goes once nothing is missing")
	boots, _ = s.networkBoots()
	assert.Equal(t, 1, boots)
}
