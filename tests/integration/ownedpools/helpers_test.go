package ownedpools

import (
	"fmt"
	"os"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

const (
	bmcUser     = "admin"
	bmcPassword = "Bmc-pw-never-shown-29"
	ns          = seederv1alpha1.InventoryNamespace
	wait        = 30 * time.Second
	tick        = 100 * time.Millisecond
)

func configure(c *config.Config) {
	c.BMCTimeout = 2 * time.Second
	c.SeederCheckInterval = 500 * time.Millisecond
}

// hardwareOpts run the hardware mode with the owned pools on, under the
// chart's RBAC of ownedPools.enabled.
func hardwareOpts() framework.Options {
	return framework.Options{Mode: config.ModeSeeder, OwnedPools: true, Configure: configure}
}

func newEnv(t *testing.T) *framework.Env {
	t.Helper()
	return framework.New(t, &shared, hardwareOpts())
}

// server is one server people own: a Redfish BMC and its Inventory.
type server struct {
	name string
	bmc  *bmcsim.BMC
}

// addServer starts a Redfish BMC (the server switched off) and registers
// its Inventory with labels, as a user does, and waits for the BMC to be
// reached.
func addServer(t *testing.T, env *framework.Env, name, mac string, lbls map[string]string) *server {
	t.Helper()
	s := addServerStopped(t, env, name, mac, lbls)
	require.Eventually(t, func() bool {
		got, err := env.Client.MetalV1alpha1().Inventories(ns).Get(env.Ctx, name, metav1.GetOptions{})
		return err == nil && got.Status.Status == seederv1alpha1.InventoryNodeReady
	}, wait, tick, "Inventory %s never reached its BMC", name)
	return s
}

// addServerStopped is addServer while no controller runs: its Inventory
// is registered, and marked as reached as the Inventories' chain would.
func addServerStopped(t *testing.T, env *framework.Env, name, mac string, lbls map[string]string) *server {
	t.Helper()
	sim, srv := framework.RedfishBMC(t, bmcsim.Options{Username: bmcUser, Password: bmcPassword})
	require.NoError(t, sim.SetPowerState("Off"))
	env.CreateBMCSecret(name, bmcUser, bmcPassword)
	inv := framework.RedfishInventory(name, srv)
	inv.Labels = lbls
	inv.Spec.ManagementInterfaceMacAddress = mac
	inv.Spec.PrimaryDisk = "/dev/nvme0n1"
	inv.Spec.Events = seederv1alpha1.Events{Enabled: false, PollingInterval: "1h"}
	env.CreateInventory(inv)
	return &server{name: name, bmc: sim}
}

// networkBoots counts the starts from the network the BMC made, and
// returns every transition, for the messages.
func (s *server) networkBoots() (int, []bmcsim.PowerTransition) {
	ts := s.bmc.PowerTransitions()
	n := 0
	for _, p := range ts {
		if p.NetworkBoot() {
			n++
		}
	}
	return n, ts
}

// ownedPool is a pool of count servers chosen by the labels.
func ownedPool(name string, count int32, match map[string]string) *equinixv1.InstancePool {
	p := &equinixv1.InstancePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Spec.Count = count
	p.Spec.Servers = &equinixv1.OwnedServers{Selector: metav1.LabelSelector{MatchLabels: match}}
	return p
}

func createPool(t *testing.T, env *framework.Env, p *equinixv1.InstancePool) {
	t.Helper()
	_, err := env.Client.EquinixV1().InstancePools().Create(env.Ctx, p, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Client.EquinixV1().InstancePools().Delete(env.Ctx, p.Name, metav1.DeleteOptions{})
		if !assert.Eventually(t, func() bool {
			insts := instancesOf(t, env, p.Name)
			return len(insts) == 0
		}, wait, tick, "pool %s's Instances were never released", p.Name) {
			for _, i := range instancesOf(t, env, p.Name) {
				t.Logf("instance %s: finalizers %v, status %s, conditions %+v", i.Name, i.Finalizers, i.Status.Status, i.Status.Conditions)
				_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
				if n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, i.NodeName(), metav1.GetOptions{}); err == nil {
					t.Logf("node %s: annotations %v, unschedulable %v", n.Name, n.Annotations, n.Spec.Unschedulable)
				}
			}
		}
	})
}

func scale(t *testing.T, env *framework.Env, pool string, count int32) {
	t.Helper()
	require.Eventually(t, func() bool {
		p, err := env.Client.EquinixV1().InstancePools().Get(env.Ctx, pool, metav1.GetOptions{})
		if err != nil {
			return false
		}
		p.Spec.Count = count
		_, err = env.Client.EquinixV1().InstancePools().Update(env.Ctx, p, metav1.UpdateOptions{})
		return err == nil
	}, wait, tick)
}

func instancesOf(t *testing.T, env *framework.Env, pool string) []equinixv1.Instance {
	t.Helper()
	list, err := env.Client.EquinixV1().Instances().List(env.Ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{equinixv1.LabelPool: pool}).String()})
	require.NoError(t, err)
	return list.Items
}

// claims counts the Inventories claimed by each Instance, and the
// Instances of each claimed Inventory's label.
func claims(t *testing.T, env *framework.Env) map[string][]string {
	t.Helper()
	list, err := env.Client.MetalV1alpha1().Inventories(ns).List(env.Ctx, metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string][]string{}
	for _, inv := range list.Items {
		if by := inv.Labels[equinixv1.LabelClaimedBy]; by != "" {
			out[by] = append(out[by], inv.Name)
		}
	}
	return out
}

func mac(i int) string { return fmt.Sprintf("52:54:00:29:00:%02x", i) }

// setReady sets the Node's Ready condition as its kubelet (or the node
// lifecycle controller) would, with the transition time given.
func setReady(t *testing.T, env *framework.Env, name string, status corev1.ConditionStatus, since time.Time) {
	t.Helper()
	require.Eventually(t, func() bool {
		n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		at := metav1.NewTime(since)
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "Test",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: at}}
		_, err = env.Kube.CoreV1().Nodes().UpdateStatus(env.Ctx, n, metav1.UpdateOptions{})
		return err == nil
	}, wait, tick)
}
