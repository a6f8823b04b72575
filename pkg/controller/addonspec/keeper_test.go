package addonspec

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/record"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
)

// Seeder's bundled values, as Harvester v1.8.0 ships them, are told from
// any values of the addon's chart.
func TestSeedersValues(t *testing.T) {
	assert.True(t, seedersValues("image:\n  tag: v1.8.0\nfullnameOverride: harvester-seeder\n"))
	assert.False(t, seedersValues("mode: hardware\nlogFormat: json\n"))
	assert.False(t, seedersValues("image:\n  tag: v1.8.0\nfullnameOverride: harvester-seeder\nmode: hardware\n"))
	assert.False(t, seedersValues("image:\n  tag: v0.1.0\n  repository: registry.example.com/hea\nfullnameOverride: harvester-seeder\n"))
	assert.False(t, seedersValues(""))
}

var addonGVR = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "addons"}

func addon(repo, version, values string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "harvesterhci.io/v1beta1", "kind": "Addon",
		"metadata": map[string]interface{}{"name": seederv1alpha1.SeederAddonName, "namespace": seederv1alpha1.SeederAddonNamespace},
		"spec":     map[string]interface{}{"repo": repo, "chart": "harvester-seeder", "version": version, "valuesContent": values, "enabled": true},
	}}
}

// The spec that names the addon's chart is recorded; Seeder's values in the
// same repo are replaced by the record; in another repo (back to Seeder)
// they are left alone.
func TestKeeper(t *testing.T) {
	const repo, ours = "https://charts.example/hea", "mode: hardware\n"
	const seeders = "image:\n  tag: v1.8.0\nfullnameOverride: harvester-seeder\n"
	scheme := runtime.NewScheme()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{addonGVR: "AddonList"},
		addon(repo, "0.1.0", ours))
	addons := client.Resource(addonGVR).Namespace(seederv1alpha1.SeederAddonNamespace)
	events := record.NewFakeRecorder(5)
	k := newKeeper(addons, events)
	ctx := context.Background()
	get := func() spec {
		a, err := addons.Get(ctx, seederv1alpha1.SeederAddonName, metav1.GetOptions{})
		require.NoError(t, err)
		return specOf(a)
	}
	set := func(s spec) {
		a, err := addons.Get(ctx, seederv1alpha1.SeederAddonName, metav1.GetOptions{})
		require.NoError(t, err)
		require.NoError(t, unstructured.SetNestedField(a.Object, s.Repo, "spec", "repo"))
		require.NoError(t, unstructured.SetNestedField(a.Object, s.Version, "spec", "version"))
		require.NoError(t, unstructured.SetNestedField(a.Object, s.ValuesContent, "spec", "valuesContent"))
		_, err = addons.Update(ctx, a, metav1.UpdateOptions{})
		require.NoError(t, err)
	}

	k.check(ctx)
	set(spec{Repo: repo, Version: "1.8.0", ValuesContent: seeders})
	k.check(ctx)
	assert.Equal(t, spec{Repo: repo, Version: "0.1.0", ValuesContent: ours}, get())
	assert.Contains(t, <-events.Events, "Warning AddonSpecRestored Seeder's chart version 1.8.0")

	// The user upgrades the addon's chart: recorded, not fought.
	set(spec{Repo: repo, Version: "0.2.0", ValuesContent: ours})
	k.check(ctx)
	set(spec{Repo: repo, Version: "1.8.1", ValuesContent: seeders})
	k.check(ctx)
	assert.Equal(t, "0.2.0", get().Version)
	<-events.Events

	// Back to Seeder: another repo.
	back := spec{Repo: "http://harvester-cluster-repo.cattle-system.svc/charts", Version: "1.8.0", ValuesContent: seeders}
	set(back)
	k.check(ctx)
	assert.Equal(t, back, get())
	assert.Empty(t, events.Events)
}
