package ownedserver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
)

// A server that asks for its script before the cache shows its boot's
// intent (stored a moment before the BMC's command) is answered: the
// process's own write opens the claim.
func TestClaimIsOpenFromTheProcesssOwnWrite(t *testing.T) {
	const mac = "0c:c4:7a:29:00:07"
	inst := &equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: "rack-x7k2p", UID: types.UID("6f1c0d55"), ResourceVersion: "7"}}
	inst.Spec.Servers = &equinixv1.OwnedServers{}
	inst.Status.Server = "rack1-u07"
	inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: seederv1alpha1.InventoryNamespace, Name: "rack1-u07",
		Labels:      map[string]string{equinixv1.LabelClaimedBy: inst.Name},
		Annotations: map[string]string{equinixv1.AnnotationClaimUID: string(inst.UID)}}}
	inv.Spec.ManagementInterfaceMacAddress = mac

	cachedInvs := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	require.NoError(t, cachedInvs.Add(inv))
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	require.NoError(t, store.Add(inst))
	written := common.NewWrites[*equinixv1.Instance](store)
	h := &harness{Provider{instances: instanceList{inst}, inventories: &inventoryAPI{cached: cachedInvs}, instanceWrites: written}}
	claims := BootClaims{p: &h.Provider}
	_, _, ok := claims.holder(mac)
	assert.False(t, ok, "no boot asked yet: no open claim")

	asked := inst.DeepCopy()
	asked.ResourceVersion = "8"
	now := metav1.NewTime(time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC))
	asked.Status.NetworkBootRequestedAt = &now
	written.Wrote(asked)
	_, got, ok := claims.holder(mac)
	require.True(t, ok, "the boot's intent, written by this process, opens the claim before the cache shows it")
	assert.Equal(t, inst.Name, got.Name)
}
