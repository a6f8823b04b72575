package vip

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	lbv1beta1 "github.com/harvester/harvester-equinix-addon/pkg/apis/loadbalancer.harvesterhci.io/v1beta1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// elasticIPOn waits until the ElasticIP of a Service's address is assigned
// to node's device, and the simulator agrees.
func (w *world) elasticIPOn(name, node string, ledger *framework.AddressLedger) {
	w.T.Helper()
	dev := w.devices[node]
	ok := assert.Eventually(w.T, func() bool {
		eip := w.ElasticIP(name)
		return eip != nil && eip.Status.Status == equinixv1.ElasticIPPhaseAssigned && eip.Status.DeviceID == dev &&
			slices.Equal(ledger.Holders(), []string{dev})
	}, time.Minute, 50*time.Millisecond, "ElasticIP %s is not on %s (device %s)", name, node, dev)
	if !ok {
		if eip := w.ElasticIP(name); eip != nil {
			w.T.Logf("%s: %s on %s, conditions %+v; holders %v", name, eip.Status.Status, eip.Status.DeviceID, eip.Status.Conditions, ledger.Holders())
		}
		w.T.FailNow()
	}
}

// LoadBalancer Services on layer 3: an ElasticIPPool reserves a block
// (tagged as the addon's) and offers it as harvester-load-balancer's
// IPPool; each Service given one of its addresses gets an ElasticIP that
// puts the address on the device of the node kube-vip names, moves it
// when kube-vip moves, and unassigns it when the Service goes. Deleting
// the pool deletes the rest and releases the block. An IPPool of the same
// name the addon did not make, and the person's own addresses, are never
// touched; an address is never on two devices.
func TestLoadBalancerServicesFollowKubeVIPOnLayer3(t *testing.T) {
	env := framework.New(t, &shared, inProcess(nil))
	env.DeleteElasticIPsAtEnd()
	w := newWorld(t, env, "lb", 2)
	foreign := w.addForeign()

	pool := env.CreateElasticIPPool("guest-lb", metro, 4)
	pool = env.WaitElasticIPPoolReady(pool.Name, time.Minute)
	block := netip.MustParsePrefix(pool.Status.CIDR)
	assert.Equal(t, 30, block.Bits(), "four addresses")
	res, err := w.metal.GetIPReservation(env.Ctx, pool.Status.ReservationID)
	require.NoError(t, err)
	assert.Equal(t, metro, res.Metro)
	assert.Contains(t, res.Tags, equinixv1.ElasticIPPoolTag(string(pool.UID)))
	clusterID, ok := equinixv1.TagValue(res.Tags, equinixv1.TagCluster)
	assert.True(t, ok && clusterID != "", "the block carries the cluster's tag")
	ipPool, err := env.Client.LoadbalancerV1beta1().IPPools().Get(env.Ctx, pool.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []lbv1beta1.Range{{Subnet: block.String(), RangeStart: framework.PoolAddress(pool, 0), RangeEnd: framework.PoolAddress(pool, 3)}}, ipPool.Spec.Ranges)
	assert.Equal(t, pool.Name, ipPool.Labels[equinixv1.LabelElasticIPPool])

	web, api := framework.PoolAddress(pool, 1), framework.PoolAddress(pool, 2)
	webLedger, apiLedger := env.WatchAddress(web), env.WatchAddress(api)
	env.LoadBalancerService("default", "web", web)
	env.LoadBalancerService("default", "api", api)
	webEIP, apiEIP := "guest-lb-"+dashed(web), "guest-lb-"+dashed(api)
	env.Eventually(func() bool { return w.ElasticIP(webEIP) != nil && w.ElasticIP(apiEIP) != nil }, time.Minute, "no ElasticIPs for the Services")
	e := w.ElasticIP(webEIP)
	assert.Equal(t, &equinixv1.ServiceReference{Namespace: "default", Name: "web"}, e.Spec.Service)
	assert.Equal(t, equinixv1.ElasticIPUnassign, e.Spec.DeletionPolicy)

	require.NoError(t, env.SetServiceVIPHost("default", "web", w.servers[0]))
	require.NoError(t, env.SetServiceVIPHost("default", "api", w.first))
	w.elasticIPOn(webEIP, w.servers[0], webLedger)
	w.elasticIPOn(apiEIP, w.first, apiLedger)
	env.Eventually(func() bool { return env.ElasticIPPool(pool.Name).Status.Services == 2 }, time.Minute, "the pool does not count its Services")

	t.Run("kube-vip moves a Service's address", func(t *testing.T) {
		require.NoError(t, env.SetServiceVIPHost("default", "web", w.servers[1]))
		w.elasticIPOn(webEIP, w.servers[1], webLedger)
	})

	t.Run("a Service that goes takes its address off its device", func(t *testing.T) {
		require.NoError(t, env.Kube.CoreV1().Services("default").Delete(env.Ctx, "web", metav1.DeleteOptions{}))
		env.Eventually(func() bool { return w.ElasticIP(webEIP) == nil && len(webLedger.Holders()) == 0 }, time.Minute,
			"web's address is still assigned: %v", webLedger.Holders())
		res, err := w.metal.GetIPReservation(env.Ctx, pool.Status.ReservationID)
		require.NoError(t, err)
		_, assigned := res.AssignmentOf(web)
		assert.False(t, assigned)
	})

	t.Run("an IPPool the addon did not make is left alone", func(t *testing.T) {
		theirs, err := env.Client.LoadbalancerV1beta1().IPPools().Create(env.Ctx, &lbv1beta1.IPPool{
			ObjectMeta: metav1.ObjectMeta{Name: "taken"},
			Spec:       lbv1beta1.IPPoolSpec{Ranges: []lbv1beta1.Range{{Subnet: "192.0.2.0/28"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		// The person's IPPool outlives the addon's objects: the next run of
		// this test on the same cluster (go test -count) makes it again.
		t.Cleanup(func() {
			_ = env.Client.LoadbalancerV1beta1().IPPools().Delete(context.Background(), theirs.Name, metav1.DeleteOptions{})
		})
		env.CreateElasticIPPool("taken", metro, 1)
		env.Eventually(func() bool {
			p := env.ElasticIPPool("taken")
			c := conditions.Get(p.Status.Conditions, equinixv1.ElasticIPPoolOffered)
			return c != nil && c.Reason == equinixv1.ReasonIPPoolTaken
		}, time.Minute, "the taken IPPool was not reported")
		released := env.ElasticIPPool("taken").Status.ReservationID
		require.NoError(t, env.Client.EquinixV1().ElasticIPPools().Delete(env.Ctx, "taken", metav1.DeleteOptions{}))
		env.Eventually(func() bool { return env.ElasticIPPool("taken") == nil }, time.Minute, "the pool did not go")
		still, err := env.Client.LoadbalancerV1beta1().IPPools().Get(env.Ctx, "taken", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, theirs.Spec, still.Spec)
		_, err = w.metal.GetIPReservation(env.Ctx, released)
		assert.True(t, metal.IsNotFound(err), "the pool's own block is released")
	})

	t.Run("a Secret naming another project for a while takes nothing from the addon", func(t *testing.T) {
		// Found by the fault campaign: the Services' ElasticIPs forgot the
		// assignments they had made while the Secret named another
		// project, found them as someone else's once it was back, left
		// them on deletion, and the pool's block was never released.
		const otherToken, otherProject = "token-of-project-b", "bbbbbbbb-0000-4000-8000-00000000000b"
		env.Sim.AddProject(otherToken, otherProject)
		env.SetSecretData(map[string]string{"METAL_AUTH_TOKEN": otherToken, "PROJECT_ID": otherProject, "JOIN_TOKEN": framework.JoinToken})
		env.Eventually(func() bool {
			c := conditions.Get(w.ElasticIP(apiEIP).Status.Conditions, equinixv1.ElasticIPCredentialsReady)
			return c != nil && c.Reason == equinixv1.ReasonProjectMismatch
		}, time.Minute, "the Service's ElasticIP did not refuse the other project")
		assert.True(t, w.ElasticIP(apiEIP).Status.AssignedByAddon, "the addon's assignment was forgotten")
		env.SetSecretData(map[string]string{"METAL_AUTH_TOKEN": framework.MetalToken, "PROJECT_ID": framework.ProjectID, "JOIN_TOKEN": framework.JoinToken})
		env.Eventually(func() bool {
			e := w.ElasticIP(apiEIP)
			return conditions.IsTrue(e.Status.Conditions, equinixv1.ElasticIPCredentialsReady) && e.Status.AssignedByAddon
		}, 2*time.Minute, "the ElasticIP did not take the Secret back as its own project's")
	})

	t.Run("deleting the pool unassigns, deletes its IPPool and releases its block", func(t *testing.T) {
		require.NoError(t, env.Client.EquinixV1().ElasticIPPools().Delete(env.Ctx, pool.Name, metav1.DeleteOptions{}))
		env.Eventually(func() bool { return env.ElasticIPPool(pool.Name) == nil }, time.Minute, "the pool did not go")
		assert.Nil(t, w.ElasticIP(apiEIP))
		assert.Empty(t, apiLedger.Holders())
		_, err := env.Client.LoadbalancerV1beta1().IPPools().Get(env.Ctx, pool.Name, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "its IPPool is deleted")
		_, err = w.metal.GetIPReservation(env.Ctx, pool.Status.ReservationID)
		assert.True(t, metal.IsNotFound(err), "its block is released")
		assert.True(t, env.EventRecorded(pool.Name, equinixv1.ReasonBlockReleased))
	})

	assert.Empty(t, webLedger.Overlaps(), "web's address was on two devices at once")
	assert.Empty(t, apiLedger.Overlaps(), "api's address was on two devices at once")
	foreign.check(w)
	env.AssertNoSecretLeaks()
}

func dashed(addr string) string {
	out := []byte(addr)
	for i, c := range out {
		if c == '.' {
			out[i] = '-'
		}
	}
	return string(out)
}
