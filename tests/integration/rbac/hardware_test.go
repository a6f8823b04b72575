package rbac

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/addonspec"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/helmtest"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/upstream"
)

// The hardware mode under the RBAC of the chart's harvester-seeder install:
// an Inventory as the UI writes it (its Secret in a namespace of the
// user's), its node's facts and an event, and a power request in
// maintenance mode, with the lease of a leader, and what Seeder left taken
// over at start (seederLeftovers). Every grant is used, none is missing.
func TestHardwareChartRBACIsExactlyWhatTheControllerUses(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{Mode: config.ModeSeeder, NoController: true})
	leftovers := seederLeftovers(t, env)
	underChartRBAC(t, env, framework.AddonOptions{LeaderElect: true, LockName: framework.SeederRelease + "-hardware"},
		leftovers, inventoryLifecycle)
}

// seederLeftovers leaves, before the controller starts, what Seeder v1.8.0
// leaves once its Addon is pointed at the chart (its CRDs with their
// schema, its webhook with nothing serving it, its finalizer on an
// Inventory) and the Addon itself; the lifecycle it returns waits until
// each is taken over: the takeover's grants are then used.
func seederLeftovers(t *testing.T, env *framework.Env) func(*testing.T, *framework.Env) {
	t.Helper()
	const name = "rbac-seeder"
	env.ApplySeederCRDs()
	inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: seederv1alpha1.InventoryNamespace, Name: name,
		Finalizers: []string{seederv1alpha1.SeederFinalizer}}}
	inv.Spec.BaseboardManagementSpec.Connection = seederv1alpha1.Connection{Host: "127.0.0.1", Port: 1, InsecureTLS: true}
	inv.Spec.Events.PollingInterval = "1h"
	invs := env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace)
	_, err := invs.Create(env.Ctx, inv, metav1.CreateOptions{})
	require.NoError(t, err)
	env.ApplySeederWebhook()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	addonCRD, err := upstream.HarvesterCRD(root, "harvesterhci.io_addons.yaml")
	require.NoError(t, err)
	out, err := helmtest.Kubectl(env.Cluster, "", "apply", "--server-side", "-f", addonCRD)
	require.NoError(t, err, out)
	out, err = helmtest.Kubectl(env.Cluster, "", "wait", "--for=condition=Established", "crd/addons.harvesterhci.io")
	require.NoError(t, err, out)
	example := filepath.Join(root, "charts", "harvester-equinix-addon", "examples", "seeder-addon.yaml")
	out, err = helmtest.Kubectl(env.Cluster, "", "apply", "-f", example)
	require.NoError(t, err, out)
	t.Cleanup(func() { _, _ = helmtest.Kubectl(env.Cluster, "", "delete", "--ignore-not-found", "-f", example) })
	return func(t *testing.T, env *framework.Env) {
		t.Helper()
		ext, err := apiextclient.NewForConfig(env.Cluster.RESTConfig)
		require.NoError(t, err)
		env.Eventually(func() bool {
			crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(env.Ctx, seederv1alpha1.InventoryCRDName, metav1.GetOptions{})
			return err == nil && crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties["hardware"].Type != ""
		}, time.Minute, "the Inventory CRD was not given the addon's schema")
		env.Eventually(func() bool {
			_, err := env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(env.Ctx, seederv1alpha1.SeederWebhookName, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, time.Minute, "Seeder's webhook stayed")
		env.Eventually(func() bool {
			got, err := invs.Get(env.Ctx, name, metav1.GetOptions{})
			return err == nil && len(got.Finalizers) == 0
		}, time.Minute, "Seeder's finalizer stayed")
		require.NoError(t, invs.Delete(env.Ctx, name, metav1.DeleteOptions{}))
		env.Eventually(func() bool {
			out, err := helmtest.Kubectl(env.Cluster, "", "-n", seederv1alpha1.SeederAddonNamespace, "get", "addons.harvesterhci.io",
				seederv1alpha1.SeederAddonName, "-o", "jsonpath={.metadata.annotations}")
			return err == nil && strings.Contains(out, addonspec.AnnotationDesiredSpec)
		}, time.Minute, "the Addon's spec was not recorded")
	}
}

// underChartRBAC runs the binary as env's chart identity through the
// lifecycles, and checks the grants against what it did.
func underChartRBAC(t *testing.T, env *framework.Env, opts framework.AddonOptions, lifecycles ...func(*testing.T, *framework.Env)) {
	t.Helper()
	require.NotNil(t, env.Identity)
	user := "system:serviceaccount:" + framework.Namespace + ":" + env.Identity.ServiceAccount
	mark := auditMark(t, env)
	addon := framework.StartAddon(t, env, opts)
	for _, lifecycle := range lifecycles {
		lifecycle(t, env)
	}
	addon.Stop()
	assertGrantsUsed(t, env, user, mark)
}

func inventoryLifecycle(t *testing.T, env *framework.Env) {
	t.Helper()
	const name, password = "rbac-inventory", "rbac-bmc-pw"
	sim, srv := framework.RedfishBMC(t, bmcsim.Options{Username: "admin", Password: password})
	sim.AddLogEntry("Warning", "Fan 2 removed")
	env.CreateReadyNode(name)
	env.CreateBMCSecret(name, "admin", password)
	inv := framework.RedfishInventory(name, srv)
	inv.Annotations = map[string]string{seederv1alpha1.AnnotationLocalNodeName: name, seederv1alpha1.AnnotationLocalInventory: "true"}
	env.CreateInventory(inv)
	invs := env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace)
	env.Eventually(func() bool {
		inv, err := invs.Get(env.Ctx, name, metav1.GetOptions{})
		n, nerr := env.Kube.CoreV1().Nodes().Get(env.Ctx, name, metav1.GetOptions{})
		return err == nil && nerr == nil && inv.Status.Status == seederv1alpha1.InventoryNodeReady && n.Labels[equinixv1.LabelManufacturer] != ""
	}, time.Minute, "the Inventory's node did not get its facts")
	env.Eventually(func() bool { return countEvents(env, name, equinixv1.ReasonHardwareWarning) > 0 }, time.Minute,
		"the BMC's event was not forwarded")

	env.SetMaintenance(name, true)
	got, err := invs.Get(env.Ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	got.Spec.PowerActionRequested = seederv1alpha1.PowerOperationReboot
	_, err = invs.Update(env.Ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	env.Eventually(func() bool {
		inv, err := invs.Get(env.Ctx, name, metav1.GetOptions{})
		return err == nil && inv.Status.PowerAction.LastActionStatus == seederv1alpha1.ActionStatusComplete
	}, time.Minute, "the reboot did not complete")
	require.Equal(t, []string{"PowerCycle"}, sim.Resets())
	require.NoError(t, invs.Delete(env.Ctx, name, metav1.DeleteOptions{}))
	require.NoError(t, env.Kube.CoreV1().Nodes().Delete(env.Ctx, name, metav1.DeleteOptions{}))
}

// The hardware mode with ownedPools.enabled under that install's RBAC: the
// Inventories' chain as above, then a pool of a server people own, which
// claims the server, boots it through its BMC, sees its Node join, and on
// scale-down, on a Harvester without maintenance mode, cordons and drains
// the Node, switches the server off, deletes the Node and the console
// Secret and frees the Inventory. Every grant is used, none is missing.
func TestOwnedPoolsChartRBACIsExactlyWhatTheControllerUses(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{Mode: config.ModeSeeder, OwnedPools: true, NoController: true})
	leftovers := seederLeftovers(t, env)
	underChartRBAC(t, env, framework.AddonOptions{LeaderElect: true, LockName: framework.SeederRelease + "-owned",
		ExtraArgs: []string{"--owned-pools"}}, leftovers, inventoryLifecycle, ownedPoolLifecycle)
}

func ownedPoolLifecycle(t *testing.T, env *framework.Env) {
	t.Helper()
	const server, password = "rbac-owned-1", "rbac-owned-pw"
	sim, srv := framework.RedfishBMC(t, bmcsim.Options{Username: "admin", Password: password})
	require.NoError(t, sim.SetPowerState("Off"))
	env.CreateBMCSecret(server, "admin", password)
	inv := framework.RedfishInventory(server, srv)
	inv.Labels = map[string]string{"rack": "rbac"}
	inv.Spec.ManagementInterfaceMacAddress = "52:54:00:35:00:01"
	inv.Spec.PrimaryDisk = "/dev/sda"
	env.CreateInventory(inv)
	env.Eventually(func() bool { return env.Inventory(server).Status.Status == seederv1alpha1.InventoryNodeReady }, time.Minute,
		"the owned server's BMC was never reached")

	// The server takes a static address from an AddressPool (read, its
	// status written) and gives it back at its release.
	addresses := env.CreateAddressPool("rbac-addresses", "10.20.0.0/29", "10.20.0.1")
	pool := &equinixv1.InstancePool{ObjectMeta: metav1.ObjectMeta{Name: "rbac-owned"}}
	pool.Spec.Count = 1
	pool.Spec.Servers = &equinixv1.OwnedServers{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"rack": "rbac"}},
		AddressPool: addresses, Nameservers: []string{"10.20.0.1"}}
	pool = env.CreatePool(pool)
	var inst equinixv1.Instance
	env.Eventually(func() bool {
		insts := env.Instances(pool.Name)
		if len(insts) != 1 || insts[0].Status.Server != server || insts[0].Status.InstallRequestedAt == nil ||
			insts[0].Status.ManagementAddress != "10.20.0.2/29" {
			return false
		}
		inst = insts[0]
		return true
	}, time.Minute, "the pool never claimed and booted its server")
	node := env.JoinOwnedServer(&inst)
	env.Eventually(func() bool {
		got, err := env.Client.EquinixV1().Instances().Get(env.Ctx, inst.Name, metav1.GetOptions{})
		return err == nil && got.Status.Status == equinixv1.PhaseManaged
	}, time.Minute, "the Instance never saw its Node join")

	// Before Harvester v1.2 the addon cordons and drains the node itself.
	setVersion(t, env, "v1.1.2")
	podsToDrain(t, env, node)
	scale(t, env, pool.Name, 0)
	env.Eventually(func() bool { return len(env.Instances(pool.Name)) == 0 }, time.Minute, "the server was never released")
	require.Equal(t, "Off", sim.PowerState())
	require.Empty(t, env.AddressPool(addresses).Status.AddressAllocation, "the address was not given back")
	setVersion(t, env, framework.HarvesterVersion)
	env.DeletePoolAndWait(pool.Name)
}

// The seeder mode with hardware.fencing.enabled under that install's
// RBAC: Seeder's leftovers and the Inventories' chain as above, then a host that dies where
// Harvester's node-down handling is on: the fencer reads the Setting
// vm-force-reset-policy and Harvester's Upgrades, switches the server off
// and taints the node. Every grant is used, none is missing.
func TestFencingChartRBACIsExactlyWhatTheControllerUses(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{Mode: config.ModeSeeder, Fencing: true, NoController: true})
	env.CreateReadyNode("rbac-own")
	env.CreateReadyNode("rbac-peer")
	leftovers := seederLeftovers(t, env)
	underChartRBAC(t, env, framework.AddonOptions{LeaderElect: true, LockName: framework.SeederRelease + "-fencing",
		ExtraArgs: []string{"--fencing", "--fencing-grace-period=2s", "--node-name=rbac-own"}}, leftovers, inventoryLifecycle, fencingLifecycle)
}

func fencingLifecycle(t *testing.T, env *framework.Env) {
	t.Helper()
	const name, password = "rbac-dead", "rbac-fence-pw"
	env.InstallHarvesterUpgradeCRD()
	env.UseNodeDownPolicy(framework.NodeDownPolicy{Enable: true, Period: 15, VMMigrationTimeout: 180})
	sim, srv := framework.RedfishBMC(t, bmcsim.Options{Username: "admin", Password: password})
	env.CreateReadyNode(name)
	env.CreateBMCSecret(name, "admin", password)
	env.CreateInventory(framework.RedfishInventory(name, srv))
	env.Eventually(func() bool {
		return conditions.IsTrue(env.Inventory(name).Status.Conditions, equinixv1.BMCAuthenticated)
	}, time.Minute, "the BMC never took the credentials")

	env.SetNodeReady(name, false)
	env.Eventually(func() bool {
		return conditions.IsTrue(env.Inventory(name).Status.Conditions, equinixv1.BMCFenced)
	}, time.Minute, "the dead host was never fenced")
	require.Equal(t, []string{"ForceOff"}, sim.Resets())
	require.NoError(t, env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace).Delete(env.Ctx, name, metav1.DeleteOptions{}))
	require.NoError(t, env.Kube.CoreV1().Nodes().Delete(env.Ctx, name, metav1.DeleteOptions{}))
}
