package health

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// On a Harvester without maintenance mode (before v1.2) the addon cordons a
// joined node and drains it itself before its server is deleted: pods of no
// controller are evicted, DaemonSet pods stay, and the device goes only once
// nothing that must move is left.
func TestDrainWhereHarvesterHasNoMaintenanceMode(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	require.NoError(t, framework.SetServerVersion(env, "v1.1.2"))
	t.Cleanup(func() { _ = framework.SetServerVersion(env, framework.HarvesterVersion) })
	p := layer3Pool(t, "old-drain", 1)
	p.Spec.HarvesterVersion = framework.HarvesterVersion
	pool := env.CreatePool(p)
	env.WaitPoolReady(pool.Name, 1, time.Minute)
	node := env.Instances(pool.Name)[0].Name

	ctx := context.Background()
	// Pods are admitted only into a namespace with a default ServiceAccount;
	// this cluster runs no kube-controller-manager to make it.
	_, err := env.Kube.CoreV1().ServiceAccounts("default").Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "default"}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "agent-" + node},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/agent"}}},
			},
		},
	}
	ds, err = env.Kube.AppsV1().DaemonSets("default").Create(ctx, ds, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Kube.AppsV1().DaemonSets("default").Delete(ctx, ds.Name, metav1.DeleteOptions{}) })
	controller := true
	pods := map[string]*corev1.Pod{
		"workload": {ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "workload-" + node}},
		"daemon": {ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "daemon-" + node,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &controller}}}},
	}
	for _, pod := range pods {
		pod.Spec = corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}}
		_, err := env.Kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
		name := pod.Name
		t.Cleanup(func() {
			zero := int64(0)
			_ = env.Kube.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		})
	}

	env.DeletePoolAndWait(pool.Name)
	_, err = env.Kube.CoreV1().Pods("default").Get(ctx, pods["workload"].Name, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the workload pod was not evicted: %v", err)
	_, err = env.Kube.CoreV1().Pods("default").Get(ctx, pods["daemon"].Name, metav1.GetOptions{})
	assert.NoError(t, err, "a DaemonSet pod was evicted")
	assert.Empty(t, env.Sim.Devices(framework.ProjectID))
	assert.False(t, env.HasEvent(node, "MaintenanceTimeout"), "the drain did not finish; the timeout let the server go")
}
