package joinagent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/harvester/harvester-equinix-addon/pkg/simulator/metalsim"
)

func TestTransient(t *testing.T) {
	node := schema.GroupResource{Resource: "nodes"}
	refused := fmt.Errorf("Post \"https://127.0.0.1:6443/api/v1/nodes\": dial tcp: %w", syscall.ECONNREFUSED)
	for _, err := range []error{refused, apierrors.NewServiceUnavailable("restarting"), apierrors.NewTooManyRequests("slow down", 1),
		apierrors.NewInternalError(errors.New("etcd")), apierrors.NewServerTimeout(node, "create", 1)} {
		assert.True(t, transient(err), "%v", err)
	}
	for _, err := range []error{nil, apierrors.NewAlreadyExists(node, "n1"), apierrors.NewForbidden(node, "n1", errors.New("no")),
		apierrors.NewBadRequest("bad")} {
		assert.False(t, transient(err), "%v", err)
	}
}

// Registration outlasts an apiserver that refuses connections for a while,
// as a kubelet's does. Found by the fault campaign: a
// registration inside an apiserver restart gave up and the server never
// joined.
func TestRegisterRetriesWhileTheAPIServerIsAway(t *testing.T) {
	kube := fake.NewClientset()
	failures := 0
	for _, verb := range []string{"create", "update"} {
		kube.PrependReactor(verb, "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
			if failures < 20 {
				failures++
				return true, nil, fmt.Errorf("dial tcp 127.0.0.1:6443: %w", syscall.ECONNREFUSED)
			}
			return false, nil, nil
		})
	}
	old := registerBackoff
	// The cap is reached at once, as the real backoff's is after seconds:
	// the retries must go on past it.
	registerBackoff = wait.Backoff{Duration: time.Millisecond, Factor: 2, Cap: 2 * time.Millisecond, Steps: math.MaxInt32}
	t.Cleanup(func() { registerBackoff = old })

	a := New(nil, Options{Kube: kube})
	ic := installConfig{Hostname: "node-1", MACs: []string{"aa:bb:cc:00:00:01"}, ISOURL: "https://releases.rancher.com/harvester/v1.4.1/harvester-v1.4.1-amd64.iso"}
	require.NoError(t, a.register(context.Background(), metalsim.Notification{DeviceID: "d1"}, ic))
	assert.Equal(t, 20, failures)

	n, err := kube.CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, n.Status.Conditions)
	assert.Equal(t, corev1.ConditionTrue, n.Status.Conditions[0].Status)
	assert.Equal(t, []string{"node-1"}, a.NodeNames())
}
