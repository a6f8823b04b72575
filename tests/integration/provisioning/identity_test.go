package provisioning

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// waitNode waits until the Node of the pool's only server satisfies ok.
func waitNode(t *testing.T, env *framework.Env, name string, ok func(*corev1.Node) bool, msg string) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	env.Eventually(func() bool {
		n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		node = n
		return ok(n)
	}, time.Minute, "%s", msg)
	return node
}

// A server's Node reads as the Equinix Metal cloud controller would leave
// it: spec.providerID equinixmetal://<device ID>, the metro as region and
// the device's facility as zone; the facility is on the Instance too.
func TestNodeIdentity(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "identity"))
	env.WaitPoolReady(pool.Name, 1, 90*time.Second)
	inst := env.Instances(pool.Name)[0]
	dev, ok := env.Sim.Device(inst.Status.InstanceID)
	require.True(t, ok)
	facility := dev.Facility.GetCode()
	require.NotEmpty(t, facility)
	assert.Equal(t, facility, inst.Status.Facility)

	node := waitNode(t, env, inst.Name, func(n *corev1.Node) bool { return n.Labels[equinixv1.LabelZone] != "" && n.Spec.ProviderID != "" },
		"the Node got no zone or provider ID")
	assert.Equal(t, "equinixmetal://"+inst.Status.InstanceID, node.Spec.ProviderID)
	assert.Equal(t, facility, node.Labels["topology.kubernetes.io/zone"])
	assert.Equal(t, "sg", node.Labels["topology.kubernetes.io/region"])
}

// A provider ID the kubelet registered with (RKE2's own, say) is never
// replaced; the labels still come.
func TestNodeProviderIDNeverOverwritten(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{KubeletProviderIDPrefix: "rke2://"})
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "identity-kept"))
	env.WaitPoolReady(pool.Name, 1, 90*time.Second)
	inst := env.Instances(pool.Name)[0]
	waitNode(t, env, inst.Name, func(n *corev1.Node) bool {
		return n.Labels[equinixv1.LabelZone] != "" && n.Labels[equinixv1.LabelDeviceID] != ""
	},
		"the Node was not labelled")
	assert.Never(t, func() bool {
		n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, inst.Name, metav1.GetOptions{})
		return err == nil && n.Spec.ProviderID != "rke2://"+inst.Name
	}, 2*time.Second, 100*time.Millisecond, "the kubelet's provider ID was replaced")
	assert.NotContains(t, framework.Logs(), "may not change providerID", "the controller tried to replace the provider ID")
}
