package harvesterapi

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
)

var addonGVR = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "addons"}

// SetSeederAddon makes Harvester's Addon harvester-system/harvester-seeder
// exist, enabled or not, shaped as Harvester's installer makes it. Its
// spec.enabled is all Harvester's node actions and UI look at.
func SetSeederAddon(ctx context.Context, t testing.TB, c *cluster.Cluster, enabled bool) {
	t.Helper()
	addons := seederAddons(t, c)
	existing, err := addons.Get(ctx, seederv1alpha1.SeederAddonName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "harvesterhci.io/v1beta1",
			"kind":       "Addon",
			"metadata": map[string]interface{}{
				"name":      seederv1alpha1.SeederAddonName,
				"namespace": seederv1alpha1.SeederAddonNamespace,
				"labels":    map[string]interface{}{"addon.harvesterhci.io/experimental": "true"},
			},
			"spec": map[string]interface{}{
				"repo":          "http://harvester-cluster-repo.cattle-system.svc/charts",
				"chart":         "harvester-seeder",
				"version":       "1.8.0",
				"enabled":       enabled,
				"valuesContent": "",
			},
		}}
		_, err = addons.Create(ctx, obj, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
		require.NoError(t, err)
		return
	}
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(existing.Object, enabled, "spec", "enabled"))
	_, err = addons.Update(ctx, existing, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// RemoveSeederAddon deletes the Addon, as on a cluster that never had it.
func RemoveSeederAddon(ctx context.Context, t testing.TB, c *cluster.Cluster) {
	t.Helper()
	err := seederAddons(t, c).Delete(ctx, seederv1alpha1.SeederAddonName, metav1.DeleteOptions{})
	if !apierrors.IsNotFound(err) {
		require.NoError(t, err)
	}
}

func seederAddons(t testing.TB, c *cluster.Cluster) dynamic.ResourceInterface {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.RESTConfig)
	require.NoError(t, err)
	return dyn.Resource(addonGVR).Namespace(seederv1alpha1.SeederAddonNamespace)
}
