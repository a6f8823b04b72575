package vip

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/node"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// initialized waits until the node has no uninitialized taint and returns it.
func initialized(t *testing.T, env *framework.Env, name string) *corev1.Node {
	t.Helper()
	var n *corev1.Node
	env.Eventually(func() bool {
		got, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		n = got
		return !slices.ContainsFunc(got.Spec.Taints, func(t corev1.Taint) bool { return t.Key == node.TaintUninitialized })
	}, time.Minute, "node %s was not initialized", name)
	return n
}

// With --initialize-nodes the addon is the cloud provider of Nodes whose
// kubelets run with --cloud-provider=external, as the Equinix CCM would
// be: the addon's servers register tainted and without addresses, and get
// their device's addresses (InternalIP the private IPv4, ExternalIP the
// public one), their provider ID, and the taint removed. A person's node
// whose kubelet was given a private Elastic IP with --node-ip is matched
// by it and gets it first as its InternalIP, not twice. A node no cloud
// provider waits for is left as it is.
func TestNodesWaitingForACloudProviderGetTheCCMsAddresses(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{ExternalCloudProvider: true,
		Configure: func(c *config.Config) { c.InitializeNodes = true }})
	w := newWorld(t, env, "ident", 1)

	server := initialized(t, env, w.servers[0])
	dev, err := w.metal.GetDevice(env.Ctx, w.devices[w.servers[0]])
	require.NoError(t, err)
	assert.Equal(t, []corev1.NodeAddress{
		{Type: corev1.NodeHostName, Address: w.servers[0]},
		{Type: corev1.NodeExternalIP, Address: dev.PublicIPv4()},
		{Type: corev1.NodeInternalIP, Address: dev.PrivateIPv4()},
	}, server.Status.Addresses)
	assert.Equal(t, equinixv1.ProviderIDPrefix+dev.ID, server.Spec.ProviderID)
	assert.True(t, env.EventRecorded(w.servers[0], equinixv1.ReasonNodeInitialized))

	t.Run("a private Elastic IP given with --node-ip comes first", func(t *testing.T) {
		c := w.metal
		d, err := c.CreateDevice(env.Ctx, metal.CreateDeviceRequest{Hostname: "ident-person", Plan: "c3.small.x86", Metro: metro,
			OperatingSystem: "ubuntu_22_04", BillingCycle: "hourly"})
		require.NoError(t, err)
		var dev *metal.Device
		env.Eventually(func() bool {
			dev, err = c.GetDevice(env.Ctx, d.ID)
			return err == nil && dev.State == metal.DeviceStateActive
		}, time.Minute, "the person's device did not become active")
		_, err = env.Sim.AddIPReservation(framework.ProjectID, metalsim.IPReservationSpec{CIDR: "10.99.0.4/32", Metro: metro, Type: "private_ipv4"})
		require.NoError(t, err)
		_, err = c.AssignIP(env.Ctx, d.ID, "10.99.0.4/32")
		require.NoError(t, err)
		_, err = env.Kube.CoreV1().Nodes().Create(env.Ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "ident-person", Annotations: map[string]string{node.AnnotationProvidedNodeIP: "10.99.0.4"}},
			Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: node.TaintUninitialized, Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = env.Kube.CoreV1().Nodes().Delete(env.Ctx, "ident-person", metav1.DeleteOptions{}) })
		n := initialized(t, env, "ident-person")
		assert.Equal(t, []corev1.NodeAddress{
			{Type: corev1.NodeHostName, Address: "ident-person"},
			{Type: corev1.NodeInternalIP, Address: "10.99.0.4"},
			{Type: corev1.NodeExternalIP, Address: dev.PublicIPv4()},
			{Type: corev1.NodeInternalIP, Address: dev.PrivateIPv4()},
		}, n.Status.Addresses)
		assert.Equal(t, equinixv1.ProviderIDPrefix+d.ID, n.Spec.ProviderID)
	})

	t.Run("a node no cloud provider waits for is left alone", func(t *testing.T) {
		first, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, w.first, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, []corev1.NodeAddress{
			{Type: corev1.NodeHostName, Address: w.first},
			{Type: corev1.NodeInternalIP, Address: first.Status.Addresses[1].Address},
		}, first.Status.Addresses)
		assert.Empty(t, first.Spec.ProviderID)
		assert.False(t, env.HasEvent(w.first, equinixv1.ReasonNodeInitialized))
	})
	env.AssertNoSecretLeaks()
}
