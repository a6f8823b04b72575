package health

import (
	"context"
	"testing"
	"time"

	metalv1 "github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/harvester/harvester-equinix-addon/pkg/controller/common"
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
		orphan := createDevice(t, env, "orphan-dry", common.ClusterTag(clusterID(t, env)))
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
		foreign := createDevice(t, env, "other-cluster", common.ClusterTag("another-cluster-id"))
		orphan := createDevice(t, env, "ours-orphan", common.ClusterTag(clusterID(t, env)), common.PoolTag("gone-pool"))
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
