package rbac

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/simulator/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// The hardware mode under the RBAC of the chart's harvester-seeder install:
// an Inventory as the UI writes it (its Secret in a namespace of the
// user's), its node's facts and an event, and a power request in
// maintenance mode, with the lease of a leader and the look for Seeder's
// CRDs at start. Every grant is used, none is missing.
func TestHardwareChartRBACIsExactlyWhatTheControllerUses(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{Mode: config.ModeHardware, NoController: true})
	require.NotNil(t, env.Identity)
	user := "system:serviceaccount:" + framework.Namespace + ":" + env.Identity.ServiceAccount
	addon := framework.StartAddon(t, env, framework.AddonOptions{LeaderElect: true, LockName: framework.SeederRelease + "-hardware"})
	inventoryLifecycle(t, env)
	addon.Stop()
	assertGrantsUsed(t, env, user)
}

func inventoryLifecycle(t *testing.T, env *framework.Env) {
	t.Helper()
	const name, secrets, password = "rbac-inventory", "rbac-bmc-secrets", "rbac-bmc-pw"
	sim := bmcsim.New(bmcsim.Options{Username: "admin", Password: password})
	sim.AddLogEntry("Warning", "Fan 2 removed")
	srv, err := bmcsim.NewServer(sim, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	_, err = env.Kube.CoreV1().Nodes().Create(env.Ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.CoreV1().Namespaces().Create(env.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secrets}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	_, err = env.Kube.CoreV1().Secrets(secrets).Create(env.Ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secrets, Name: name},
		Data: map[string][]byte{"username": []byte("admin"), "password": []byte(password)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	invs := env.Client.MetalV1alpha1().Inventories(v1alpha1.InventoryNamespace)
	inv := &v1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: v1alpha1.InventoryNamespace, Name: name,
		Annotations: map[string]string{v1alpha1.AnnotationLocalNodeName: name, v1alpha1.AnnotationLocalInventory: "true"}}}
	inv.Spec.BaseboardManagementSpec.Connection = v1alpha1.Connection{Host: srv.Host, Port: srv.Port, CABundle: string(srv.CACertPEM),
		AuthSecretRef: corev1.SecretReference{Namespace: secrets, Name: name}}
	inv.Spec.Events = v1alpha1.Events{Enabled: true, PollingInterval: "1s"}
	_, err = invs.Create(env.Ctx, inv, metav1.CreateOptions{})
	require.NoError(t, err)
	env.Eventually(func() bool {
		inv, err := invs.Get(env.Ctx, name, metav1.GetOptions{})
		n, nerr := env.Kube.CoreV1().Nodes().Get(env.Ctx, name, metav1.GetOptions{})
		return err == nil && nerr == nil && inv.Status.Status == v1alpha1.InventoryNodeReady && n.Labels[v1.LabelManufacturer] != ""
	}, time.Minute, "the Inventory's node did not get its facts")
	env.Eventually(func() bool { return countEvents(env, name, v1.ReasonHardwareWarning) > 0 }, time.Minute,
		"the BMC's event was not forwarded")

	_, err = env.Kube.CoreV1().Nodes().Patch(env.Ctx, name, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+harvester.AnnotationMaintainStatus+`":"completed"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	got, err := invs.Get(env.Ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	got.Spec.PowerActionRequested = v1alpha1.PowerOperationReboot
	_, err = invs.Update(env.Ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	env.Eventually(func() bool {
		inv, err := invs.Get(env.Ctx, name, metav1.GetOptions{})
		return err == nil && inv.Status.PowerAction.LastActionStatus == v1alpha1.ActionStatusComplete
	}, time.Minute, "the reboot did not complete")
	require.Equal(t, []string{"PowerCycle"}, sim.Resets())
	require.NoError(t, invs.Delete(env.Ctx, name, metav1.DeleteOptions{}))
	require.NoError(t, env.Kube.CoreV1().Nodes().Delete(env.Ctx, name, metav1.DeleteOptions{}))
}
