package health

import (
	"context"
	"strings"
	"testing"
	"time"

	metalv1 "github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

func sdk(env *framework.Env) *metalv1.APIClient {
	cfg := metalv1.NewConfiguration()
	cfg.Servers = metalv1.ServerConfigurations{{URL: env.SimURL}}
	cfg.AddDefaultHeader("X-Auth-Token", framework.MetalToken)
	return metalv1.NewAPIClient(cfg)
}

func createDevice(t *testing.T, env *framework.Env, hostname string, tags ...string) string {
	t.Helper()
	in := metalv1.DeviceCreateInMetroInput{Metro: "da", Plan: "c3.small.x86", OperatingSystem: "ubuntu_22_04",
		Hostname: metalv1.PtrString(hostname), Tags: tags}
	dev, _, err := sdk(env).DevicesApi.CreateDevice(context.Background(), framework.ProjectID).
		CreateDeviceRequest(metalv1.CreateDeviceRequest{DeviceCreateInMetroInput: &in}).Execute()
	require.NoError(t, err)
	return dev.GetId()
}

func exists(env *framework.Env, id string) bool {
	_, ok := env.Sim.Device(id)
	return ok
}

func clusterID(t *testing.T, env *framework.Env) string {
	ns, err := env.Kube.CoreV1().Namespaces().Get(env.Ctx, "kube-system", metav1.GetOptions{})
	require.NoError(t, err)
	return string(ns.UID)
}

// The sweep deletes only devices tagged with this cluster that no Instance
// claims, and only after the grace period; untagged devices and devices of
// another cluster survive; dry run only reports.
func TestOrphanSweep(t *testing.T) {
	t.Run("dry run only reports", func(t *testing.T) {
		env := framework.New(t, &shared, framework.Options{Configure: func(c *configT) {
			c.OrphanSweepInterval, c.OrphanGracePeriod, c.OrphanDryRun = 200*time.Millisecond, 0, true
		}})
		orphan := createDevice(t, env, "orphan-dry", equinixv1.ClusterTag(clusterID(t, env)))
		env.Eventually(func() bool { return env.HasEvent("harvester-system", "OrphanDevice") }, 30*time.Second,
			"the dry-run sweep did not report the orphan")
		assert.True(t, exists(env, orphan), "dry run deleted a device")
		cleanup(env, orphan)
	})
	t.Run("deletes our orphans after the grace period, nothing else", func(t *testing.T) {
		env := framework.New(t, &shared, framework.Options{Configure: func(c *configT) {
			c.OrphanSweepInterval, c.OrphanGracePeriod, c.OrphanDryRun = 200*time.Millisecond, 2*time.Second, false
		}})
		untagged := createDevice(t, env, "not-ours")
		foreign := createDevice(t, env, "other-cluster", equinixv1.ClusterTag("another-cluster-id"))
		orphan := createDevice(t, env, "ours-orphan", equinixv1.ClusterTag(clusterID(t, env)), equinixv1.PoolTag("gone-pool"))
		start := time.Now()
		env.Eventually(func() bool {
			d, ok := env.Sim.Device(orphan)
			return !ok || d.GetState() == metalv1.DEVICESTATE_DEPROVISIONING
		}, time.Minute, "our orphan was not deleted")
		assert.GreaterOrEqual(t, time.Since(start), 1*time.Second, "deleted before its grace period")
		assert.True(t, exists(env, untagged), "an untagged device was touched")
		assert.True(t, exists(env, foreign), "another cluster's device was touched")
		assert.True(t, env.EventRecorded("harvester-system", "OrphanDeleted"))
		cleanup(env, untagged, foreign)
	})
}

// cleanup removes devices a test made directly, so later tests start clean.
func cleanup(env *framework.Env, ids ...string) {
	for _, id := range ids {
		_ = env.Sim.DeleteDeviceOutOfBand(id)
	}
}

// When a person removes an Instance's finalizer by hand in the middle of its
// deletion, the sweep deletes its device (an orphan now) and then the Node
// the addon labelled, which the kubelet of a deleted server can no longer
// keep Ready. Before, that cordoned Node stayed forever.
func TestOrphanedNodeIsSwept(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{NoMaintenanceEmulator: true, Configure: func(c *configT) {
		c.OrphanSweepInterval, c.OrphanGracePeriod, c.OrphanDryRun = 300*time.Millisecond, 0, false
	}})
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "finalizer-by-hand"))
	env.WaitPoolReady(pool.Name, 1, time.Minute)
	inst := env.Instances(pool.Name)[0]

	// The deletion waits for maintenance mode, which nothing completes here.
	require.NoError(t, env.Client.EquinixV1().InstancePools().Delete(env.Ctx, pool.Name, metav1.DeleteOptions{}))
	env.Eventually(func() bool {
		node, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, inst.Name, metav1.GetOptions{})
		return err == nil && node.Annotations["harvesterhci.io/drain-requested"] == "true"
	}, 30*time.Second, "maintenance was not requested")
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	_, err := env.Client.EquinixV1().Instances().Patch(env.Ctx, inst.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)

	env.Eventually(func() bool { return !exists(env, inst.Status.InstanceID) }, time.Minute, "the orphaned device was not swept")
	env.Eventually(func() bool {
		_, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, inst.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, time.Minute, "the orphaned Node was not swept")
	assert.True(t, env.EventRecorded("harvester-system", "OrphanNodeDeleted"))
}

// A Node that carries the instance label but is not named like the
// Instance, or that is still Ready, is never swept.
func TestSweepLeavesNodesItDoesNotOwn(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{Configure: func(c *configT) {
		c.OrphanSweepInterval, c.OrphanGracePeriod, c.OrphanDryRun = 200*time.Millisecond, 0, false
	}})
	foreign := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses-node",
		Labels: map[string]string{equinixv1.LabelInstance: "some-instance"}}}
	_, err := env.Kube.CoreV1().Nodes().Create(env.Ctx, foreign, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Kube.CoreV1().Nodes().Delete(env.Ctx, foreign.Name, metav1.DeleteOptions{}) })
	// Several sweeps run; the Node must survive them all.
	env.Eventually(func() bool { return sweeps(env) >= 3 }, 30*time.Second, "no sweep ran")
	_, err = env.Kube.CoreV1().Nodes().Get(env.Ctx, foreign.Name, metav1.GetOptions{})
	assert.NoError(t, err, "a Node the addon does not own was deleted")
}

// sweeps counts the sweep's project lists so far.
func sweeps(env *framework.Env) int {
	n := 0
	for _, r := range env.Sim.RequestsFor("findProjectDevices") {
		if strings.Contains(r.Query, "tag=equinix.harvesterhci.io%2Fcluster") {
			n++
		}
	}
	return n
}
