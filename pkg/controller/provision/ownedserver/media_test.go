package ownedserver

import (
	"testing"
	"time"

	"github.com/rancher/wrangler/v3/pkg/generic"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
)

// instanceList is a cache of Instances, for pure logic.
type instanceList []*equinixv1.Instance

var _ equinixcontrollers.InstanceCache = instanceList(nil)

func (l instanceList) Get(name string) (*equinixv1.Instance, error) {
	for _, i := range l {
		if i.Name == name {
			return i, nil
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "instances"}, name)
}

func (l instanceList) List(labels.Selector) ([]*equinixv1.Instance, error) { return l, nil }

func (l instanceList) AddIndexer(string, generic.Indexer[*equinixv1.Instance]) {}

func (l instanceList) GetByIndex(string, string) ([]*equinixv1.Instance, error) { return nil, nil }

func ownedInstance(name string, set func(*equinixv1.InstanceStatus)) *equinixv1.Instance {
	inst := &equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: name}}
	inst.Spec.Servers = &equinixv1.OwnedServers{}
	set(&inst.Status)
	return inst
}

// A server is booted from a boot image only while fewer than
// bootendpoint.MaxMediaBoots others are booting from theirs: told to (the
// image inserted, or the HTTP boot set), their claim open, their script
// not fetched yet. Any other state holds no image.
func TestBootsFromImagesArePaced(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC))
	var insts instanceList
	for i := range bootendpoint.MaxMediaBoots - 1 {
		insts = append(insts, ownedInstance("booting-"+string(rune('a'+i)), func(st *equinixv1.InstanceStatus) {
			st.BootPath, st.BootMediaInsertedAt = equinixv1.BootPathVirtualMedia, &now
		}))
	}
	gone := now
	for name, set := range map[string]func(*equinixv1.InstanceStatus){
		"script-fetched": func(st *equinixv1.InstanceStatus) {
			st.BootPath, st.BootMediaInsertedAt, st.BootScriptServedAt = equinixv1.BootPathVirtualMedia, &now, &now
		},
		"joined": func(st *equinixv1.InstanceStatus) {
			st.BootPath, st.BootMediaInsertedAt, st.JoinedAt = equinixv1.BootPathVirtualMedia, &now, &now
		},
		"ejected": func(st *equinixv1.InstanceStatus) {
			st.BootPath, st.BootMediaInsertedAt, st.BootMediaEjectedAt = equinixv1.BootPathVirtualMedia, &now, &now
		},
		"pxe": func(st *equinixv1.InstanceStatus) {
			st.BootPath, st.NetworkBootRequestedAt = equinixv1.BootPathPXE, &now
		},
		"http-not-asked": func(st *equinixv1.InstanceStatus) { st.BootPath = equinixv1.BootPathUefiHTTP },
	} {
		insts = append(insts, ownedInstance(name, set))
	}
	deleting := ownedInstance("deleting", func(st *equinixv1.InstanceStatus) {
		st.BootPath, st.BootMediaInsertedAt = equinixv1.BootPathVirtualMedia, &now
	})
	deleting.DeletionTimestamp = &gone
	self := ownedInstance("self", func(st *equinixv1.InstanceStatus) { st.BootPath = equinixv1.BootPathVirtualMedia })
	insts = append(insts, deleting, self)

	h := &harness{Provider{instances: insts}}
	inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Name: "rack-u09"}}
	r := h.newRun(self)
	assert.False(t, r.imagesBusy(inv), "one place left")

	http := ownedInstance("http-booting", func(st *equinixv1.InstanceStatus) {
		st.BootPath, st.NetworkBootRequestedAt = equinixv1.BootPathUefiHTTP, &now
	})
	h.instances = append(insts, http)
	r = h.newRun(self)
	assert.True(t, r.imagesBusy(inv), "as many boot from images as the endpoint serves at once")
	c := conditions.Get(r.Obj.Status.Conditions, equinixv1.InstanceInstalling)
	if assert.NotNil(t, c) {
		assert.Equal(t, equinixv1.ReasonBootImagesBusy, c.Reason)
		assert.Contains(t, c.Message, "16 servers are booting from their boot images")
	}
	assert.Equal(t, "boot image", r.Obj.Status.WaitingFor)
}

// A server whose boot from an image this process stored a moment ago
// counts before the cache shows it: with many workers booting a pool at
// once, each would otherwise find the last place free.
func TestBootsFromImagesCountTheProcesssOwnWrites(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC))
	var insts instanceList
	for i := range bootendpoint.MaxMediaBoots - 1 {
		insts = append(insts, ownedInstance("booting-"+string(rune('a'+i)), func(st *equinixv1.InstanceStatus) {
			st.BootPath, st.BootMediaInsertedAt = equinixv1.BootPathVirtualMedia, &now
		}))
	}
	cached := ownedInstance("just-inserted", func(st *equinixv1.InstanceStatus) { st.BootPath = equinixv1.BootPathVirtualMedia })
	cached.ResourceVersion = "7"
	insts = append(insts, cached)
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	require.NoError(t, store.Add(cached))
	written := common.NewWrites[*equinixv1.Instance](store)
	inserted := cached.DeepCopy()
	inserted.ResourceVersion = "8"
	inserted.Status.BootMediaInsertedAt = &now
	written.Wrote(inserted)

	self := ownedInstance("self", func(st *equinixv1.InstanceStatus) { st.BootPath = equinixv1.BootPathVirtualMedia })
	h := &harness{Provider{instances: append(insts, self), instanceWrites: written}}
	r := h.newRun(self)
	assert.True(t, r.imagesBusy(&seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Name: "rack-u09"}}),
		"the intent written a moment ago fills the last place")
}
