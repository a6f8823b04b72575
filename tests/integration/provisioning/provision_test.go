package provisioning

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metalv1 "github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

var shared cluster.Shared

func TestMain(m *testing.M) {
	os.Exit(cluster.RunMain(m, cluster.Options{}, &shared))
}

// The seed's sample pool (examples/instancepool.yaml), applied unchanged,
// ends ready 1/1 with a managed Instance showing its device ID and
// addresses, installed through the seed's two-phase flow (iPXE shell, then
// a reinstall with the installer).
func TestSeedSamplePoolBecomesReady(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, ""))

	env.WaitPoolReady(pool.Name, 1, 90*time.Second)
	insts := env.Instances(pool.Name)
	require.Len(t, insts, 1)
	inst := insts[0]
	assert.Regexp(t, `^harvester-pxe-worker-[a-z]{8}$`, inst.Name)
	assert.Equal(t, equinixv1.PhaseManaged, inst.Status.Status)
	assert.NotEmpty(t, inst.Status.InstanceID)
	assert.NotEmpty(t, inst.Status.PublicIP)
	assert.NotEmpty(t, inst.Status.PrivateIP)
	assert.Equal(t, inst.Name, inst.Status.NodeName)

	dev, ok := env.Sim.Device(inst.Status.InstanceID)
	require.True(t, ok)
	assert.Equal(t, "sg", dev.Metro.GetCode(), "the seed's metro SG is sent lowercase")
	assert.Equal(t, "c3.small.x86", dev.Plan.GetSlug())

	// The simulator saw the reinstall, and the config the installer read named
	// the MAC of this device's eth0.
	var reinstalls int
	for _, r := range env.Sim.RequestsFor("performAction") {
		if r.Status == 202 {
			reinstalls++
		}
	}
	assert.Equal(t, 1, reinstalls, "exactly one reinstall")
	last := env.JoinResult(inst.Status.InstanceID)
	require.True(t, last.OK, last.Reason)
	assert.Equal(t, []string{strings.ToLower(inst.Status.MACAddresses["eth0"])}, last.MACs)

	// The Node is labelled by its own chain, which need not be done when
	// the Instance is managed.
	node := waitNode(t, env, inst.Name, func(n *corev1.Node) bool { return n.Labels[equinixv1.LabelDeviceID] != "" },
		"the Node was not labelled")
	assert.Equal(t, inst.Status.InstanceID, node.Labels[equinixv1.LabelDeviceID])
	assert.Equal(t, "c3.small.x86", node.Labels["node.kubernetes.io/instance-type"])
	assert.Equal(t, "sg", node.Labels["topology.kubernetes.io/region"])
	assert.Equal(t, "equinixmetal://"+inst.Status.InstanceID, node.Annotations[equinixv1.AnnotationProviderID])

	for _, reason := range []string{equinixv1.ReasonDeviceCreated, equinixv1.ReasonDeviceActive, equinixv1.ReasonInstallStarted, equinixv1.ReasonNodeJoined, equinixv1.ReasonNodeReady} {
		assert.True(t, env.EventRecorded(inst.Name, reason), "no %s Event on the Instance", reason)
	}
	env.AssertNoSecretLeaks()
}

// A pool of three converges; scaling to one removes two devices and their
// Nodes; deleting the pool leaves nothing behind.
func TestScaleAndDelete(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	p := framework.ParsePool(t, framework.SeedSample, "scale-pool")
	p.Spec.Count = 3
	pool := env.CreatePool(p)
	env.WaitPoolReady(pool.Name, 3, 2*time.Minute)
	before := env.Instances(pool.Name)

	patchCount(t, env, pool.Name, 1)
	env.WaitPoolReady(pool.Name, 1, 2*time.Minute)
	remaining := env.Instances(pool.Name)
	require.Len(t, remaining, 1)
	env.Eventually(func() bool { return len(env.Sim.Devices(framework.ProjectID)) == 1 }, time.Minute, "devices of removed instances remain")
	for _, i := range before {
		if i.Name == remaining[0].Name {
			continue
		}
		env.Eventually(func() bool {
			_, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, i.Name, metav1.GetOptions{})
			return err != nil
		}, time.Minute, "node %s of a removed instance remains", i.Name)
	}

	env.DeletePoolAndWait(pool.Name)
	assert.Empty(t, env.Sim.Devices(framework.ProjectID), "devices left after the pool was deleted")
	assert.Empty(t, env.Instances(pool.Name))
	nodes, err := env.Kube.CoreV1().Nodes().List(env.Ctx, metav1.ListOptions{LabelSelector: equinixv1.LabelPool + "=" + pool.Name})
	require.NoError(t, err)
	assert.Empty(t, nodes.Items)
	env.AssertNoSecretLeaks()
}

func patchCount(t *testing.T, env *framework.Env, name string, count int32) {
	t.Helper()
	env.EditPool(name, func(p *equinixv1.InstancePool) {
		p.Spec.Count = count
	})
}

// single-boot installs on the first boot: the device carries the installer
// from its creation, iPXE reads the MAC itself, and there is no reinstall.
func TestSingleBootNeedsNoReinstall(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	p := framework.ParsePool(t, framework.SeedSample, "single-boot")
	p.Spec.BootMode = equinixv1.BootModeSingleBoot
	pool := env.CreatePool(p)
	env.WaitPoolReady(pool.Name, 1, 90*time.Second)

	inst := env.Instances(pool.Name)[0]
	assert.Empty(t, env.Sim.RequestsFor("performAction"), "single-boot reinstalled the device")
	last := env.JoinResult(inst.Status.InstanceID)
	require.True(t, last.OK, last.Reason)
	assert.Equal(t, []string{strings.ToLower(inst.Status.MACAddresses["eth0"])}, last.MACs,
		"the MAC iPXE put on the kernel line is this device's eth0")
	dev, ok := env.Sim.Device(inst.Status.InstanceID)
	require.True(t, ok)
	assert.Contains(t, dev.GetIpxeScriptUrl(), "/single-boot.ipxe")
	env.AssertNoSecretLeaks()
}

// Once the node has joined, the join token no longer sits in the device's
// userdata, where anyone reading the Metal project could find it.
func TestUserdataClearedAfterJoin(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{})
	// What the installer read at the reinstall boot: the join configuration.
	var installUserdata atomic.Value
	unsubscribe := env.Sim.Subscribe(func(n metalsim.Notification) {
		if n.Type == metalsim.DeviceBooted && n.Boot != nil && n.Boot.Reason == metalsim.BootReinstall {
			installUserdata.Store(n.Userdata)
		}
	})
	t.Cleanup(unsubscribe)
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, "userdata"))
	env.WaitPoolReady(pool.Name, 1, 90*time.Second)
	inst := env.Instances(pool.Name)[0]
	got, _ := installUserdata.Load().(string)
	require.Contains(t, got, "token:", "the install did not carry a join configuration")

	cfg := metalv1.NewConfiguration()
	cfg.Servers = metalv1.ServerConfigurations{{URL: env.SimURL}}
	cfg.AddDefaultHeader("X-Auth-Token", framework.MetalToken)
	api := metalv1.NewAPIClient(cfg)
	env.Eventually(func() bool {
		dev, _, err := api.DevicesApi.FindDeviceById(context.Background(), inst.Status.InstanceID).Execute()
		return err == nil && !strings.Contains(dev.GetUserdata(), framework.JoinToken)
	}, 30*time.Second, "the join token is still readable in the device's userdata")
}

// A pass that comes long after the reinstall (a controller restarted, or the
// queue of a large fleet provisioning at once) finds the server's Node
// registered and records the join without reading the device again: the
// Node tells how the install went.
func TestLateJoinPassReadsNoDevice(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{InstallTime: 2 * time.Second})
	pool := env.CreatePool(framework.ParsePool(t, framework.SeedSample, ""))
	var inst equinixv1.Instance
	env.Eventually(func() bool {
		insts := env.Instances(pool.Name)
		if len(insts) != 1 || insts[0].Status.InstallRequestedAt == nil {
			return false
		}
		inst = insts[0]
		for _, r := range env.Sim.RequestsFor(metalsim.OpPerformAction) {
			if r.Status == 202 && strings.Contains(r.Path, inst.Status.InstanceID) {
				return true
			}
		}
		return false
	}, time.Minute, "the reinstall was not sent")

	// The server installs and joins while no controller runs, and for far
	// longer than the controller waits between reads of an installing
	// device (4 poll intervals).
	env.StopController()
	env.Eventually(func() bool {
		node, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, inst.Name, metav1.GetOptions{})
		return err == nil && len(node.Status.Conditions) > 0
	}, time.Minute, "node %s did not register", inst.Name)
	env.Sim.ResetRequests()
	env.StartController(env.Config(framework.Options{}))

	env.WaitPoolReady(pool.Name, 1, time.Minute)
	for _, r := range env.Sim.RequestsFor(metalsim.OpFindDeviceByID) {
		assert.NotContains(t, r.Path, inst.Status.InstanceID, "the device was read after its Node registered")
	}
	assert.NotEmpty(t, env.Sim.RequestsFor(metalsim.OpUpdateDevice), "the join configuration is still taken off the device")
}
