package bootendpoint

import (
	"fmt"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

const (
	wait = 30 * time.Second
	tick = 50 * time.Millisecond
	// podName is the pod the binary is told it runs in.
	podName = "harvester-seeder-addon-7d9f8-x2x4q"
)

// listening is the binary's log line that names the boot endpoint's port.
var listening = regexp.MustCompile(`boot endpoint of the servers people own listens on (127\.0\.0\.1:\d+)`)

// A replica that does not lead is never behind the Service: started as a
// standby on a pod still labelled from an earlier run, it removes the label
// before it is ready; leading, it labels the pod once the endpoint answers;
// killed as a leader and restarted, its pod leaves the Service before the
// restarted process is ready, while the dead leader's lease still runs.
func TestOnlyTheLeadersPodIsBehindTheIPXEService(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{Mode: config.ModeHardware, OwnedPools: true, NoController: true})
	pods := env.Kube.CoreV1().Pods(framework.Namespace)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: framework.Namespace, Name: podName,
		Labels: map[string]string{"app.kubernetes.io/name": "harvester-equinix-addon", v1.LabelBootEndpoint: v1.BootEndpointServing}},
		Spec: corev1.PodSpec{ServiceAccountName: env.Identity.ServiceAccount, AutomountServiceAccountToken: new(bool),
			TerminationGracePeriodSeconds: new(int64), Containers: []corev1.Container{{Name: "controller", Image: "registry.invalid/none"}}}}
	_, err := pods.Create(env.Ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pods.Delete(env.Ctx, podName, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}) })
	serving := func() string {
		got, err := pods.Get(env.Ctx, podName, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "harvester-equinix-addon", got.Labels["app.kubernetes.io/name"], "the pod's other labels stay")
		return got.Labels[v1.LabelBootEndpoint]
	}

	lock := "boot-endpoint-" + fmt.Sprint(time.Now().UnixNano())
	holdLease(t, env, lock)
	addon := framework.StartAddon(t, env, framework.AddonOptions{LeaderElect: true, LockName: lock,
		ExtraArgs: []string{"--owned-pools", "--pod-name", podName}})
	waitReadyWithout(t, addon, serving, "a standby")
	assert.NotRegexp(t, listening, addon.Log(), "a standby does not serve the boot endpoint")

	require.NoError(t, env.Kube.CoordinationV1().Leases(framework.Namespace).Delete(env.Ctx, lock, metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return serving() == v1.BootEndpointServing }, wait, tick,
		"the leader never labelled its pod:\n%s", addon.Log())
	m := listening.FindStringSubmatch(addon.Log())
	require.NotNil(t, m, "the leader labelled its pod but does not listen")
	resp, err := http.Get("http://" + m[1] + "/boot/ipxe?mac=52:54:00:29:00:01")
	require.NoError(t, err, "the labelled pod answers")
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "no claim on that MAC")

	// A leader that dies leaves its label (the pod is not ready while its
	// container restarts); the restarted process, a standby until the dead
	// leader's lease runs out, removes it before it is ready.
	require.True(t, addon.Kill())
	assert.Equal(t, v1.BootEndpointServing, serving())
	addon.Start()
	waitReadyWithout(t, addon, serving, "a restarted leader")
}

// holdLease makes another replica the leader of lock, for an hour.
func holdLease(t *testing.T, env *framework.Env, lock string) {
	t.Helper()
	holder, seconds, now := "another-replica", int32(3600), metav1.NewMicroTime(time.Now())
	_, err := env.Kube.CoordinationV1().Leases(framework.Namespace).Create(env.Ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: framework.Namespace, Name: lock},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// waitReadyWithout waits for /readyz and checks that by then the pod had
// lost the label: a ready pod with the label would be an endpoint of the
// Service that refuses connections.
func waitReadyWithout(t *testing.T, addon *framework.Addon, serving func() string, who string) {
	t.Helper()
	require.Eventually(t, func() bool {
		resp, err := http.Get(addon.HealthURL("/readyz"))
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, wait, tick, "%s never became ready:\n%s", who, addon.Log())
	assert.Empty(t, serving(), "%s was ready with its pod behind the iPXE Service", who)
}
