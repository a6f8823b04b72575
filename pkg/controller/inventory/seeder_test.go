package inventory

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
)

// crdSet is the cluster's CRDs, as their metadata reads.
type crdSet map[string]*metav1.PartialObjectMetadata

func (c crdSet) get(_ context.Context, name string) (*metav1.PartialObjectMetadata, error) {
	if m, ok := c[name]; ok {
		return m, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, name)
}

func crd(name string, annotations map[string]string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Annotations: annotations}}
}

// Seeder is found by its mark on the Inventory CRD, or by rufio's machines;
// the addon's own Inventory CRD (installed by its chart) is not Seeder's.
// Found, every Inventory stays untouched and is told once, the CRD gets an
// Event; gone, every Inventory runs again.
func TestSeederGuard(t *testing.T) {
	crds := crdSet{seederv1alpha1.InventoryCRDName: crd(seederv1alpha1.InventoryCRDName, map[string]string{"meta.helm.sh/release-name": "harvester-seeder"})}
	events := record.NewFakeRecorder(10)
	woken := 0
	g := newSeederGuard(crds.get, events, func() { woken++ })
	ctx := context.Background()

	g.check(ctx)
	assert.False(t, g.present(), "the chart's own CRD")
	assert.Empty(t, events.Events)

	crds[seederv1alpha1.InventoryCRDName] = crd(seederv1alpha1.InventoryCRDName, map[string]string{seederv1alpha1.SeederCRDOwnerAnnotation: seederv1alpha1.SeederCRDOwnerID})
	g.check(ctx)
	require.True(t, g.present())
	require.Len(t, events.Events, 1)
	assert.Contains(t, <-events.Events, "Warning SeederInstalled Harvester Seeder is installed (CRD inventories.metal.harvesterhci.io carries objectset.rio.cattle.io/id=seeder-crd")
	g.check(ctx)
	assert.Empty(t, events.Events, "told once per finding")

	inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: seederv1alpha1.InventoryNamespace, Name: "node-1", UID: "i1"}}
	g.tell(inv)
	g.tell(inv)
	require.Len(t, events.Events, 1, "each Inventory once")
	<-events.Events

	delete(crds, seederv1alpha1.InventoryCRDName)
	g.check(ctx)
	assert.False(t, g.present())
	assert.Equal(t, 1, woken)

	crds[seederv1alpha1.RufioMachinesCRD] = crd(seederv1alpha1.RufioMachinesCRD, nil)
	g.check(ctx)
	assert.True(t, g.present())
	assert.Contains(t, <-events.Events, "machines.bmc.tinkerbell.org exists")
	g.tell(inv)
	assert.Len(t, events.Events, 1, "a new finding tells again")
}

// A look that fails (RBAC, an apiserver away) changes nothing.
func TestSeederGuardKeepsItsFindingOnAFailedLook(t *testing.T) {
	fail := func(context.Context, string) (*metav1.PartialObjectMetadata, error) {
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "customresourcedefinitions"}, "x", nil)
	}
	g := newSeederGuard(fail, record.NewFakeRecorder(1), func() {})
	g.found = "something"
	g.check(context.Background())
	assert.True(t, g.present())
}
