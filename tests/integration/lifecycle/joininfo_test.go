package lifecycle

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// Without a join token no server is paid for: the pool names the Secret key
// to add, the Instance waits before its create, and adding the key is enough.
func TestMissingJoinTokenCreatesNoDevice(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{NoController: true, NoJoinToken: true})
	startController(env)
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "no-join-token"))

	c := waitPoolCondition(t, env, pool.Name, equinixv1.PoolJoinInfoReady, metav1.ConditionFalse, equinixv1.ReasonJoinInfoMissing)
	assert.Contains(t, c.Message, "JOIN_TOKEN")
	assert.Contains(t, c.Message, framework.Namespace+"/"+framework.SecretName)
	assertWarning(t, env, pool.Name, equinixv1.ReasonJoinInfoMissing)
	// The Instance got as far as its create and refused to send it.
	inst := waitInstanceCondition(t, env, pool.Name, equinixv1.InstanceInstallConfigured, metav1.ConditionFalse, equinixv1.ReasonJoinTokenMissing)
	assert.Equal(t, equinixv1.PhasePending, inst.Status.Status)
	assert.Empty(t, inst.Status.InstanceID)
	assertWarning(t, env, inst.Name, equinixv1.ReasonJoinTokenMissing)
	assertNoMetalDevices(t, env)
	assert.Equal(t, equinixv1.PoolPhasePending, env.Pool(pool.Name).Status.Status)

	env.SetSecretData(secretData(framework.MetalToken))
	env.WaitPoolReady(pool.Name, 1, 90*time.Second)
	assert.Equal(t, metav1.ConditionTrue, poolCondition(env, pool.Name, equinixv1.PoolJoinInfoReady).Status)
	recovered := env.Instances(pool.Name)
	require.Len(t, recovered, 1)
	assert.Equal(t, inst.Name, recovered[0].Name, "the Instance was replaced instead of recovering")
	env.AssertNoSecretLeaks()
}

// Without the VIP ConfigMap there is no join URL: the pool names the
// ConfigMap, nothing is created, and restoring it is enough.
func TestMissingVIPConfigMapCreatesNoDevice(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{NoController: true})
	cms := env.Kube.CoreV1().ConfigMaps(framework.Namespace)
	require.NoError(t, cms.Delete(env.Ctx, harvester.VIPConfigMapName, metav1.DeleteOptions{}))
	startController(env)
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "no-vip"))

	c := waitPoolCondition(t, env, pool.Name, equinixv1.PoolJoinInfoReady, metav1.ConditionFalse, equinixv1.ReasonJoinInfoMissing)
	assert.Contains(t, c.Message, framework.Namespace+"/"+harvester.VIPConfigMapName)
	assertWarning(t, env, pool.Name, equinixv1.ReasonJoinInfoMissing)
	inst := waitInstanceCondition(t, env, pool.Name, equinixv1.InstanceInstallConfigured, metav1.ConditionFalse, equinixv1.ReasonClusterURLMissing)
	assert.Contains(t, framework.Condition(&inst, equinixv1.InstanceInstallConfigured).Message, framework.Namespace+"/"+harvester.VIPConfigMapName)
	assertWarning(t, env, inst.Name, equinixv1.ReasonClusterURLMissing)
	assertNoMetalDevices(t, env)

	_, err := cms.Create(env.Ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: framework.Namespace, Name: harvester.VIPConfigMapName},
		Data:       map[string]string{"ip": framework.VIP, "enabled": "true"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	env.WaitPoolReady(pool.Name, 1, 90*time.Second)
	assert.Equal(t, metav1.ConditionTrue, poolCondition(env, pool.Name, equinixv1.PoolJoinInfoReady).Status)
	env.AssertNoSecretLeaks()
}
