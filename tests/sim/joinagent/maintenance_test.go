package joinagent

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

func TestEmulateMaintenanceCompletesRequestedDrains(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kube := fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "idle"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "drained", Annotations: map[string]string{annotationDrainRequested: "true"}}},
	)
	a := New(nil, Options{Kube: kube})
	go a.EmulateMaintenance(ctx, 10*time.Millisecond)

	status := func(name string) string {
		n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return n.Annotations[annotationMaintainStatus]
	}
	require.Eventually(t, func() bool { return status("drained") == "completed" }, 5*time.Second, 10*time.Millisecond)
	n, err := kube.CoreV1().Nodes().Get(ctx, "drained", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, n.Spec.Unschedulable, "the node is cordoned")
	assert.NotContains(t, n.Annotations, annotationDrainRequested, "the request is taken off once maintenance runs, as Harvester does")
	_, ok := a.MaintenanceCompletedAt("drained")
	assert.True(t, ok)

	// A drain requested later, through the watch.
	_, err = kube.CoreV1().Nodes().Patch(ctx, "idle", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+annotationDrainRequested+`":"true"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return status("idle") == "completed" }, 5*time.Second, 10*time.Millisecond)
	_, ok = a.MaintenanceCompletedAt("idle")
	assert.True(t, ok)

	// A request on a node whose maintenance completed runs it again.
	_, err = kube.CoreV1().Nodes().Patch(ctx, "idle", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+annotationDrainRequested+`":"true"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		n, err := kube.CoreV1().Nodes().Get(ctx, "idle", metav1.GetOptions{})
		require.NoError(t, err)
		_, requested := n.Annotations[annotationDrainRequested]
		return !requested && n.Annotations[annotationMaintainStatus] == "completed"
	}, 5*time.Second, 10*time.Millisecond)
}

// The emulation's writes reach the observer as the apiserver answered them.
func TestObserveMaintenanceSeesTheStoredNode(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kube := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "drained",
		Annotations: map[string]string{annotationDrainRequested: "true"}}})
	a := New(nil, Options{Kube: kube})
	seen := make(chan string, 16)
	a.ObserveMaintenance(func(n *corev1.Node) { seen <- n.Annotations[annotationMaintainStatus] })
	go a.EmulateMaintenance(ctx, 10*time.Millisecond)
	var got []string
	require.Eventually(t, func() bool {
		for {
			select {
			case s := <-seen:
				got = append(got, s)
			default:
				return len(got) > 0 && got[len(got)-1] == "completed"
			}
		}
	}, 5*time.Second, 10*time.Millisecond, "seen: %v", got)
	assert.Equal(t, "running", got[0], "every step is seen, the first too")
}
