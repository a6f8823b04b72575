package ownedserver

import (
	"errors"
	"strconv"
	"testing"

	"github.com/rancher/wrangler/v3/pkg/generic"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
)

// inventoryAPI stands for the apiserver's Inventories (stored) beside the
// informer's copies (cached), which a restart leaves behind for a while.
type inventoryAPI struct {
	generic.ControllerInterface[*seederv1alpha1.Inventory, *seederv1alpha1.InventoryList]
	stored map[string]*seederv1alpha1.Inventory
	cached toolscache.Indexer
	// lose makes the next Update store the write and fail, as when an
	// apiserver restart cuts the connection before the answer.
	lose bool
	// late makes the next Update fail at once and store the write only
	// after the next Get, as when the client gave up on a request the
	// apiserver was still carrying out.
	late    bool
	landing *seederv1alpha1.Inventory
	// conflicts counts the updates refused for a stale resource version.
	conflicts int
}

func (a *inventoryAPI) Get(_, name string, _ metav1.GetOptions) (*seederv1alpha1.Inventory, error) {
	inv, ok := a.stored[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "inventories"}, name)
	}
	read := inv.DeepCopy()
	if a.landing != nil {
		landing := a.landing
		a.landing = nil
		_, _ = a.Update(landing)
	}
	return read, nil
}

func (a *inventoryAPI) Update(inv *seederv1alpha1.Inventory) (*seederv1alpha1.Inventory, error) {
	if a.late {
		a.late = false
		a.landing = inv.DeepCopy()
		return nil, errors.New("context deadline exceeded")
	}
	cur := a.stored[inv.Name]
	if cur.ResourceVersion != inv.ResourceVersion {
		a.conflicts++
		return nil, apierrors.NewConflict(schema.GroupResource{Resource: "inventories"}, inv.Name, errors.New("stale"))
	}
	rv, _ := strconv.Atoi(cur.ResourceVersion)
	stored := inv.DeepCopy()
	stored.ResourceVersion = strconv.Itoa(rv + 1)
	a.stored[inv.Name] = stored
	if a.lose {
		a.lose = false
		return nil, errors.New("unexpected EOF")
	}
	return stored.DeepCopy(), nil
}

func (a *inventoryAPI) Cache() generic.CacheInterface[*seederv1alpha1.Inventory] {
	return inventoryCache{a.cached}
}

type inventoryCache struct{ toolscache.Indexer }

func (c inventoryCache) Get(namespace, name string) (*seederv1alpha1.Inventory, error) {
	obj, ok, err := c.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "inventories"}, name)
	}
	return obj.(*seederv1alpha1.Inventory), nil
}

func (c inventoryCache) List(_ string, sel labels.Selector) ([]*seederv1alpha1.Inventory, error) {
	var out []*seederv1alpha1.Inventory
	for _, obj := range c.Indexer.List() {
		if inv := obj.(*seederv1alpha1.Inventory); sel.Matches(labels.Set(inv.Labels)) {
			out = append(out, inv)
		}
	}
	return out, nil
}

func (inventoryCache) AddIndexer(string, generic.Indexer[*seederv1alpha1.Inventory]) {}

func (inventoryCache) GetByIndex(string, string) ([]*seederv1alpha1.Inventory, error) {
	return nil, nil
}

// noNodes is a Node cache without nodes.
type noNodes struct {
	generic.NonNamespacedCacheInterface[*corev1.Node]
}

func (noNodes) Get(name string) (*corev1.Node, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, name)
}

// twoFreeServers is a handler whose apiserver and cache hold two free
// servers, rack-1 and rack-2, and an Instance of servers people own.
func twoFreeServers(t *testing.T) (*inventoryAPI, *harness, *equinixv1.Instance) {
	t.Helper()
	api := &inventoryAPI{stored: map[string]*seederv1alpha1.Inventory{}, cached: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, nil)}
	for _, name := range []string{"rack-1", "rack-2"} {
		inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: seederv1alpha1.InventoryNamespace, ResourceVersion: "1"}}
		inv.Spec.ManagementInterfaceMacAddress = "0c:c4:7a:00:00:01"
		inv.Status.Status = seederv1alpha1.InventoryNodeReady
		api.stored[name] = inv
		require.NoError(t, api.cached.Add(inv.DeepCopy()))
	}
	h := &harness{Provider{inventories: api, nodes: noNodes{}, owned: newOwnedState(api.cached)}}
	inst := &equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: "rack-x7k2p", UID: "uid-1"}}
	inst.Spec.Servers = &equinixv1.OwnedServers{}
	return api, h, inst
}

// A claim whose answer was lost, though the apiserver stored it, is the
// Instance's: the next pass, on a cache that still shows the server free,
// holds that server and claims no other (which would leave the first
// claimed by the Instance after it is gone).
func TestALostClaimAnswerClaimsNoSecondServer(t *testing.T) {
	api, h, inst := twoFreeServers(t)

	api.lose = true
	_, _, _, err := h.newRun(inst).claim()
	require.Error(t, err, "the answer was lost")
	require.True(t, common.ClaimedBy(api.stored["rack-1"], inst), "the apiserver stored the claim")

	r := h.newRun(inst)
	held, err := r.claimedServer()
	require.NoError(t, err)
	if held == nil {
		held, _, _, err = r.claim()
		require.NoError(t, err)
	}
	require.NotNil(t, held)
	assert.Equal(t, "rack-1", held.Name)
	assert.False(t, Claimed(api.stored["rack-2"]), "a second server claimed")
}

// A claim whose answer was lost and that was not stored leaves the server
// to claim again.
func TestALostClaimNotStoredIsSettled(t *testing.T) {
	api := &inventoryAPI{stored: map[string]*seederv1alpha1.Inventory{}, cached: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, nil)}
	inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Name: "rack-1", Namespace: seederv1alpha1.InventoryNamespace, ResourceVersion: "1"}}
	api.stored["rack-1"] = inv
	h := &harness{Provider{inventories: api, nodes: noNodes{}, owned: newOwnedState(api.cached)}}
	inst := &equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: "rack-x7k2p", UID: "uid-1"}}
	h.owned.unsure(inst.UID, "rack-1")

	held, err := h.newRun(inst).claimedServer()
	require.NoError(t, err)
	assert.Nil(t, held)
	assert.Empty(t, h.owned.unsureOf(inst.UID), "settled")
}

// A claim whose answer was lost and that lands only after it was read back
// (the client gave up while the apiserver was still on it) is still the
// Instance's one claim: the read-back claims the server again on the copy
// it read, which the late write makes a conflict, and the next read finds
// the claim. No second server is claimed.
func TestALostClaimLandingAfterTheReadBackClaimsNoSecondServer(t *testing.T) {
	api, h, inst := twoFreeServers(t)

	api.late = true
	_, _, _, err := h.newRun(inst).claim()
	require.Error(t, err, "the client gave up")

	var held *seederv1alpha1.Inventory
	for pass := 0; pass < 3 && held == nil; pass++ {
		r := h.newRun(inst)
		if held, err = r.claimedServer(); err != nil || held != nil {
			continue
		}
		held, _, _, err = r.claim()
	}
	require.NoError(t, err)
	require.NotNil(t, held)
	assert.Equal(t, "rack-1", held.Name)
	assert.True(t, common.ClaimedBy(api.stored["rack-1"], inst))
	assert.False(t, Claimed(api.stored["rack-2"]), "a second server claimed")
}

// Instances that claim one after the other before the cache shows the
// first claim (a pool that grows) each take a free server at the first
// try: the process's own claim is not tried again.
func TestClaimsInARowSkipTheProcesssOwnClaims(t *testing.T) {
	api, h, inst := twoFreeServers(t)
	other := &equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: "rack-q9m4z", UID: "uid-2"}}
	other.Spec.Servers = &equinixv1.OwnedServers{}

	first, _, _, err := h.newRun(inst).claim()
	require.NoError(t, err)
	second, _, _, err := h.newRun(other).claim()
	require.NoError(t, err)
	require.NotNil(t, first)
	require.NotNil(t, second)
	assert.Equal(t, []string{"rack-1", "rack-2"}, []string{first.Name, second.Name})
	assert.Zero(t, api.conflicts, "a claim was refused: the server was tried though this process had just claimed it")
}

// A server another worker of the process is claiming at this moment is
// skipped, not claimed a second time only to be refused: its claim may be
// stored already, and neither the cache nor the process's writes show it.
func TestAServerAnotherWorkerIsClaimingIsSkipped(t *testing.T) {
	api, h, inst := twoFreeServers(t)
	require.True(t, h.owned.claiming.take("rack-1"), "the other worker's claim")
	taken := api.stored["rack-1"].DeepCopy()
	taken.ResourceVersion = "2"
	api.stored["rack-1"] = taken

	held, _, _, err := h.newRun(inst).claim()
	require.NoError(t, err)
	require.NotNil(t, held)
	assert.Equal(t, "rack-2", held.Name)
	assert.Zero(t, api.conflicts, "the server another worker was claiming was tried")
	h.owned.claiming.done("rack-1")
	assert.True(t, h.owned.claiming.take("rack-1"), "a claim's end frees its server for the next")
}

func TestHostName(t *testing.T) {
	assert.True(t, HostName("rack-a-1"))
	for _, bad := range []string{"rack.a.1", "Rack-A-1", "a-very-long-inventory-name-that-is-longer-than-sixty-three-characters", ""} {
		assert.False(t, HostName(bad), bad)
	}
}
