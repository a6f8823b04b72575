package seeder

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

const (
	bmcUser     = "admin"
	bmcPassword = "Bmc-pw-never-shown-73"
)

func options() framework.Options {
	return framework.Options{Mode: config.ModeSeeder, NoController: true, NoInventoryCRD: true,
		Configure: func(c *config.Config) {
			c.BMCTimeout = time.Second
			c.SeederCheckInterval = 500 * time.Millisecond
		}}
}

// seederInventory is the Inventory of a node as the UI writes it for a
// Seeder user: "Insecure TLS" ticked (Seeder never verifies a certificate),
// no field Seeder's schema lacks.
func seederInventory(node string, srv *bmcsim.Server) *seederv1alpha1.Inventory {
	inv := framework.RedfishInventory(node, srv)
	inv.Annotations = map[string]string{seederv1alpha1.AnnotationLocalInventory: "true", seederv1alpha1.AnnotationLocalNodeName: node}
	inv.Spec.BaseboardManagementSpec.Connection.CABundle = ""
	inv.Spec.BaseboardManagementSpec.Connection.InsecureTLS = true
	return inv
}

// The whole move on one cluster, as a user makes it: Seeder ran (its
// Lease renewed, its webhook served), served three Inventories (one ready,
// one with a shutdown it took and never ended, one about to be turned
// off), then its Addon was pointed at the addon's chart, which removes
// Seeder's Deployment and Service; later the user goes back. Each numbered
// part of issue 36 is a subtest; before the fix the controller stood back
// for good (1), the webhook refused every write (2), the finalizer held a
// deleted Inventory and the pending request was never carried out (3),
// and the CRD dropped the addon's fields (5).
func TestMovingFromSeederAndBack(t *testing.T) {
	env := framework.New(t, &shared, options())
	env.ApplySeederCRDs()
	stopSeeder := env.RunSeederLease()
	env.ServeSeederWebhook()

	simA, srvA := framework.RedfishBMC(t, bmcsim.Options{Username: bmcUser, Password: bmcPassword})
	simB, srvB := framework.RedfishBMC(t, bmcsim.Options{Username: bmcUser, Password: bmcPassword})
	_, srvC := framework.RedfishBMC(t, bmcsim.Options{Username: bmcUser, Password: bmcPassword})
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		env.CreateReadyNode(n)
		env.CreateBMCSecret(n, bmcUser, bmcPassword)
	}
	env.CreateInventory(seederInventory("node-a", srvA))
	b := seederInventory("node-b", srvB)
	b.Spec.PowerActionRequested = seederv1alpha1.PowerOperationShutdown
	env.CreateInventory(b)
	env.CreateInventory(seederInventory("node-c", srvC))
	env.SetMaintenance("node-b", true)
	env.CreateSeederLocalCluster("node-a", "node-b", "node-c")
	env.PlantSeederInventory("node-a", framework.SeederReadyStatus("10.0.0.21", "on",
		map[string]string{"actionStatus": "complete", "lastActionRequested": "poweron", "lastJobName": "node-a-poweron-q8r2d"}))
	env.PlantSeederInventory("node-b", framework.SeederReadyStatus("10.0.0.22", "on",
		map[string]string{"lastJobName": "node-b-shutdown-x7k2q"}))
	env.PlantSeederInventory("node-c", framework.SeederReadyStatus("10.0.0.23", "on", nil))
	env.ApplySeederWebhook()

	env.StartController(env.Config(options()))

	t.Run("while Seeder runs the addon stands back", func(t *testing.T) {
		eventually(t, func() bool { return env.HasEvent("node-a", equinixv1.ReasonSeederRunning) }, time.Minute, "no Event on the Inventory")
		eventually(t, func() bool { return value(t, "equinix_addon_seeder_running", "") == 1 }, time.Minute, "the metric does not say Seeder runs")
		assert.Never(t, func() bool {
			inv := env.Inventory("node-a")
			return simA.Requests() > 0 || simB.Requests() > 0 || !slices.Contains(inv.Finalizers, seederv1alpha1.SeederFinalizer) ||
				inv.Status.Hardware != nil
		}, 3*time.Second, 100*time.Millisecond, "an Inventory was served beside a running Seeder")
		_, err := env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(env.Ctx, seederv1alpha1.SeederWebhookName, metav1.GetOptions{})
		assert.NoError(t, err, "the webhook of a running Seeder was removed")
	})

	// Pointing the Addon at the addon's chart removes Seeder's Deployment
	// (its Lease is no longer renewed) and its Service.
	stopSeeder()
	env.RemoveSeederService()

	t.Run("1 Seeder's leftovers do not keep the addon away", func(t *testing.T) {
		// Reachable is the addon's own condition (Seeder writes none of
		// that name); status.status reads inventoryNodeReady either way.
		eventually(t, func() bool {
			c := conditions.Get(env.Inventory("node-a").Status.Conditions, equinixv1.BMCReachable)
			return ready(env, "node-a") && c != nil && c.Status == metav1.ConditionTrue
		}, 2*time.Minute, "the Inventory was not served once Seeder was gone")
		assert.Equal(t, float64(0), value(t, "equinix_addon_seeder_running", ""))
	})

	t.Run("2 Seeder's orphaned webhook is removed", func(t *testing.T) {
		eventually(t, func() bool {
			_, err := env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(env.Ctx, seederv1alpha1.SeederWebhookName, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, time.Minute, "Seeder's webhook stayed")
		assert.True(t, env.EventRecorded(seederv1alpha1.SeederWebhookName, equinixv1.ReasonSeederWebhookRemoved))
		assert.GreaterOrEqual(t, value(t, "equinix_addon_seeder_leftovers_taken_over_total", "webhook"), float64(1))
		// The UI's Save: a PUT of the Inventory (a conflict with a status
		// write of the poll is the UI's to retry; the webhook's refusal
		// is no conflict).
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			inv := env.Inventory("node-a")
			inv.Spec.Events.PollingInterval = "2s"
			_, err := env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace).Update(env.Ctx, inv, metav1.UpdateOptions{})
			return err
		})
		require.NoError(t, err, "an Out-of-Band Access Save failed")
	})

	t.Run("3 Seeder's finalizer, status and pending request are taken over", func(t *testing.T) {
		eventually(t, func() bool {
			return !slices.Contains(env.Inventory("node-a").Finalizers, seederv1alpha1.SeederFinalizer)
		}, time.Minute,
			"Seeder's finalizer stayed")
		for _, c := range env.Inventory("node-a").Status.Conditions {
			assert.NotContains(t, seederv1alpha1.SeederConditionTypes, c.Type, "Seeder's condition %s stayed", c.Type)
		}
		// The shutdown Seeder took and never ended is carried out, once.
		eventually(t, func() bool {
			return env.Inventory("node-b").Status.PowerAction.LastActionStatus == seederv1alpha1.ActionStatusComplete
		}, time.Minute, "Seeder's pending shutdown was never carried out")
		assert.Equal(t, "Off", simB.PowerState())
		assert.Equal(t, []string{"ForceOff"}, simB.Resets())
		assert.True(t, env.EventRecorded("node-b", equinixv1.ReasonSeederRequestTakenOver))
		// Out-of-Band Access turned off: the Inventory goes.
		require.NoError(t, env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace).Delete(env.Ctx, "node-c", metav1.DeleteOptions{}))
		eventually(t, func() bool {
			_, err := env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace).Get(env.Ctx, "node-c", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, time.Minute, "the deleted Inventory stayed Terminating")
		assert.Never(t, func() bool { return len(simB.Resets()) > 1 }, 2*time.Second, 100*time.Millisecond, "the request was carried out twice")
	})

	t.Run("5 the live CRD is given the addon's schema", func(t *testing.T) {
		ext, err := apiextclient.NewForConfig(env.Cluster.RESTConfig)
		require.NoError(t, err)
		crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(env.Ctx, seederv1alpha1.InventoryCRDName, metav1.GetOptions{})
		require.NoError(t, err)
		props := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties
		conn := props["spec"].Properties["baseboardSpec"].Properties["connection"].Properties
		for _, f := range []string{"caBundle", "systemID", "timeout"} {
			assert.Contains(t, conn, f)
		}
		assert.Contains(t, props["status"].Properties, "hardware")
		assert.Equal(t, seederv1alpha1.SeederCRDOwnerID, crd.Annotations[seederv1alpha1.SeederCRDOwnerAnnotation], "Seeder's marks are kept")
		assert.True(t, env.EventRecorded(seederv1alpha1.InventoryCRDName, equinixv1.ReasonInventorySchemaTakenOver))
		assert.Equal(t, float64(0), value(t, "equinix_addon_inventory_schema_outdated", ""))
		// The event cursor and the rest of the addon's record stay.
		eventually(t, func() bool {
			hw := env.Inventory("node-a").Status.Hardware
			return hw != nil && hw.LastPolled != nil
		}, time.Minute, "the addon's record under status.hardware was dropped")
	})

	t.Run("nothing blocks Seeder when the user goes back", func(t *testing.T) {
		// Seeder's start: its CRDs first, then its Lease, which it takes
		// only once the one its last pod left has expired (15 s).
		env.ApplySeederCRDs()
		env.RunSeederLease()
		env.ServeSeederWebhook()
		env.ApplySeederWebhook()
		eventually(t, func() bool { return value(t, "equinix_addon_seeder_running", "") == 1 }, time.Minute, "the addon did not stand back")
		// Seeder's schema is back (its apply at start), and the addon,
		// which saw Seeder's apply before Seeder took its Lease, left it.
		ext, err := apiextclient.NewForConfig(env.Cluster.RESTConfig)
		require.NoError(t, err)
		assert.Never(t, func() bool {
			crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(env.Ctx, seederv1alpha1.InventoryCRDName, metav1.GetOptions{})
			require.NoError(t, err)
			_, ours := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties["hardware"]
			return ours
		}, 3*time.Second, 100*time.Millisecond, "the addon took Seeder's CRD back from a starting Seeder")
		_, err = env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(env.Ctx, seederv1alpha1.SeederWebhookName, metav1.GetOptions{})
		assert.NoError(t, err, "the webhook of a running Seeder was removed")
		invs, err := env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace).List(env.Ctx, metav1.ListOptions{})
		require.NoError(t, err)
		assert.Len(t, invs.Items, 2, "an Inventory was lost")
	})
}

// eventually is require.Eventually on a subtest's t: a part that fails
// stops only itself, so each numbered part shows on its own.
func eventually(t *testing.T, cond func() bool, timeout time.Duration, msg string) {
	t.Helper()
	require.Eventually(t, cond, timeout, 100*time.Millisecond, msg)
}

func ready(env *framework.Env, name string) bool {
	return env.Inventory(name).Status.Status == seederv1alpha1.InventoryNodeReady
}

// value reads a metric of the in-process controller: a series without
// labels when label is "", else the series whose one label has that value.
func value(t *testing.T, name, label string) float64 {
	t.Helper()
	families, err := metrics.Registerer().(prometheus.Gatherer).Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			got := ""
			for _, l := range m.GetLabel() {
				got = l.GetValue()
			}
			if got != label {
				continue
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
