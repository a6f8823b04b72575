package joinagent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
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

	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
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
	ic := Install{Hostname: "node-1", MACs: []string{"aa:bb:cc:00:00:01"}, ISOURL: "https://releases.rancher.com/harvester/v1.4.1/harvester-v1.4.1-amd64.iso"}
	require.NoError(t, a.register(context.Background(), metalsim.Notification{DeviceID: "d1"}, ic))
	assert.Equal(t, 20, failures)

	n, err := kube.CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, n.Status.Conditions)
	assert.Equal(t, corev1.ConditionTrue, n.Status.Conditions[0].Status)
	assert.Equal(t, []string{"node-1"}, a.NodeNames())
}

// A registration the apiserver refuses for good leaves the server no
// node: the agent does not count it as one of its nodes, or its heartbeats
// and stops would go to a Node that does not exist.
func TestRefusedRegistrationLeavesNoNode(t *testing.T) {
	kube := fake.NewClientset()
	kube.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "node-1", errors.New("no"))
	})
	a := New(nil, Options{Kube: kube})
	ic := Install{Hostname: "node-1", MACs: []string{"aa:bb:cc:00:00:01"}, ISOURL: "https://releases.rancher.com/harvester/v1.4.1/harvester-v1.4.1-amd64.iso"}
	require.Error(t, a.register(context.Background(), metalsim.Notification{DeviceID: "d1"}, ic))
	assert.Empty(t, a.NodeNames())
}

// A management network cut shorter than the grace goes unnoticed, as with a
// real kubelet; one that lasts makes the Node NotReady, and the fix makes it
// Ready at once. Found by the fault campaign: a layer-2 conversion after the
// join (the management VLAN moves from bond0 to eth0 in a few calls) made
// the Node NotReady for a moment, a dip no real cluster shows.
func TestShortNetworkCutsGoUnnoticed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kube := fake.NewClientset()
	var mu sync.Mutex
	var blipNotReady int
	kube.PrependReactor("update", "nodes", func(action k8stesting.Action) (bool, runtime.Object, error) {
		n, ok := action.(k8stesting.UpdateAction).GetObject().(*corev1.Node)
		if !ok || n.Name != "blip" {
			return false, nil, nil
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionFalse {
				mu.Lock()
				blipNotReady++
				mu.Unlock()
			}
		}
		return false, nil, nil
	})
	a := New(nil, Options{Kube: kube, NetworkGrace: 300 * time.Millisecond})
	go a.writes.run(ctx)
	const mac = "b4:96:91:00:00:10"
	onBond := func(vlans ...int32) metalsim.NetworkState {
		return metalsim.NetworkState{Type: "hybrid-bonded", MACs: map[string]string{"eth0": mac}, Ports: []metalsim.PortState{
			{Name: "bond0", Bonded: true, VLANs: vlans},
			{Name: "eth0", MAC: mac, Bond: "bond0", Bonded: true},
		}}
	}
	for _, dev := range []string{"blip", "cut"} {
		ic := Install{Hostname: dev, MACs: []string{mac}, VLANID: 1000,
			ISOURL: "https://releases.rancher.com/harvester/v1.4.1/harvester-v1.4.1-amd64.iso"}
		require.NoError(t, a.register(ctx, metalsim.Notification{DeviceID: dev, Network: onBond(1000)}, ic))
	}
	ready := func(name string) corev1.ConditionStatus {
		n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status
			}
		}
		return corev1.ConditionUnknown
	}
	changed := func(dev string, ns metalsim.NetworkState) {
		a.writes.push(func(ctx context.Context) { a.networkChanged(ctx, metalsim.Notification{DeviceID: dev, Network: ns}) })
	}
	changed("blip", onBond())
	changed("blip", onBond(1000))
	changed("cut", onBond())
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return ready("cut") == corev1.ConditionFalse, nil
	}), "a cut that outlasts the grace leaves the Node Ready")
	// The blip's check was due first, and the queue runs in order.
	mu.Lock()
	assert.Zero(t, blipNotReady, "a cut shorter than the grace made the Node NotReady")
	mu.Unlock()
	assert.Equal(t, corev1.ConditionTrue, ready("blip"))

	changed("cut", onBond(1000))
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return ready("cut") == corev1.ConditionTrue, nil
	}), "the fixed network left the Node NotReady")
}
