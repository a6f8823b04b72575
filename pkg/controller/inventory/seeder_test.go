package inventory

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

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

// leaseOf is Seeder's Lease as its leader election leaves it: nil when
// there is none.
type leaseOf struct{ lease *coordinationv1.Lease }

func (l *leaseOf) get(_ context.Context, _, name string) (*coordinationv1.Lease, error) {
	if l.lease == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, name)
	}
	return l.lease, nil
}

func (l *leaseOf) renew(at time.Time) {
	l.lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: seederv1alpha1.SeederAddonNamespace, Name: seederv1alpha1.SeederLeaseName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("harvester-seeder-5f7c_1"), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: &metav1.MicroTime{Time: at}}}
}

// Seeder runs while its controller renews its Lease: then nothing is
// reconciled, the CRD and each Inventory are told once. Its CRD's mark
// or rufio's CRD without a renewed Lease are leftovers: the Inventories
// are served, and the check hands them over. A Lease renewed since the
// last look counts whatever the clocks say; one not renewed for longer
// than its duration is a Seeder gone.
func TestSeederGuard(t *testing.T) {
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	crds := crdSet{seederv1alpha1.InventoryCRDName: crd(seederv1alpha1.InventoryCRDName, map[string]string{"meta.helm.sh/release-name": "harvester-seeder"})}
	lease := &leaseOf{}
	events := record.NewFakeRecorder(10)
	woken := 0
	var checked []seederState
	g := newSeederGuard(crds.get, lease.get, events, func() { woken++ }, func(_ context.Context, s seederState) { checked = append(checked, s) })
	g.now = func() time.Time { return now }
	ctx := context.Background()

	g.check(ctx)
	assert.False(t, g.present(), "the chart's own CRD")
	assert.False(t, g.leftovers())
	assert.Equal(t, []seederState{seederAbsent}, checked)

	crds[seederv1alpha1.InventoryCRDName] = crd(seederv1alpha1.InventoryCRDName, map[string]string{seederv1alpha1.SeederCRDOwnerAnnotation: seederv1alpha1.SeederCRDOwnerID})
	g.check(ctx)
	assert.False(t, g.present(), "Seeder's CRD alone is a leftover")
	assert.True(t, g.leftovers())
	assert.Empty(t, events.Events)

	lease.renew(now.Add(-5 * time.Second))
	g.check(ctx)
	require.True(t, g.present())
	require.Len(t, events.Events, 1)
	assert.Contains(t, <-events.Events, "Warning SeederRunning Harvester Seeder is running (harvester-seeder-5f7c_1 renews Seeder's Lease harvester-system/28b21117.harvesterhci.io")
	g.check(ctx)
	assert.Empty(t, events.Events, "told once while it runs")

	inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: seederv1alpha1.InventoryNamespace, Name: "node-1", UID: "i1"}}
	g.tell(inv)
	g.tell(inv)
	require.Len(t, events.Events, 1, "each Inventory once")
	<-events.Events

	// Two minutes later, the Lease was not renewed: Seeder is gone.
	now = now.Add(2 * time.Minute)
	g.check(ctx)
	assert.False(t, g.present())
	assert.True(t, g.leftovers())
	assert.Equal(t, 1, woken)

	// Renewed by a node whose clock is behind: it changed, so it runs.
	lease.renew(now.Add(-10 * time.Minute))
	g.check(ctx)
	assert.True(t, g.present(), "a renewal seen counts whatever the clocks say")
	now = now.Add(2 * time.Minute)
	g.check(ctx)
	assert.False(t, g.present(), "no renewal since")

	// Only rufio's CRD left.
	delete(crds, seederv1alpha1.InventoryCRDName)
	crds[seederv1alpha1.RufioMachinesCRD] = crd(seederv1alpha1.RufioMachinesCRD, nil)
	g.check(ctx)
	assert.True(t, g.leftovers())
	assert.Equal(t, seederLeftovers, checked[len(checked)-1])
}

// A look that fails (RBAC, an apiserver away) changes nothing.
func TestSeederGuardKeepsItsFindingOnAFailedLook(t *testing.T) {
	fail := func(context.Context, string) (*metav1.PartialObjectMetadata, error) {
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "customresourcedefinitions"}, "x", nil)
	}
	called := false
	g := newSeederGuard(fail, (&leaseOf{}).get, record.NewFakeRecorder(1), func() {}, func(context.Context, seederState) { called = true })
	g.state = seederRunning
	g.check(context.Background())
	assert.True(t, g.present())
	assert.False(t, called, "nothing is taken over on a failed look")
}
