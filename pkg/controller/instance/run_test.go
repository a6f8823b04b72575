package instance

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision/equinixmetal"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
)

// versionedStore stands in for the apiserver's Instance statuses: it keeps
// the last written, numbering writes as the apiserver does. The embedded
// interface is nil: the chain's pass calls only UpdateStatus.
type versionedStore struct {
	equinixcontrollers.InstanceController
	stored *equinixv1.Instance
}

func (s *versionedStore) UpdateStatus(inst *equinixv1.Instance) (*equinixv1.Instance, error) {
	written := inst.DeepCopy()
	rv, _ := strconv.Atoi(written.ResourceVersion)
	written.ResourceVersion = strconv.Itoa(rv + 1)
	s.stored = written
	return written.DeepCopy(), nil
}

// A pass that starts while the informer cache still holds the version
// before the chain's last status write starts from that write: it must
// not redo what the write recorded (a port call under way is not sent
// twice).
func TestAPassStartsFromTheChainsOwnLastWrite(t *testing.T) {
	cached := &equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: "i", UID: "u", ResourceVersion: "1", Finalizers: []string{equinixv1.FinalizerInstance}}}
	cache := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	require.NoError(t, cache.Add(cached))
	store := &versionedStore{}
	h := &Handler{instances: store, recorder: record.NewFakeRecorder(10), written: common.NewWrites[*equinixv1.Instance](cache),
		provider: &equinixmetal.Provider{}}

	r := h.newRun(h.latest(cached))
	r.SetCondition(equinixv1.InstanceNetworkConfigured, metav1.ConditionFalse, equinixv1.ReasonConverging, "waiting for a conversion")
	_, err := r.Finish(nil)
	require.NoError(t, err)

	next := h.latest(cached)
	assert.Equal(t, "2", next.ResourceVersion, "the write, not the cached copy before it")
	assert.Equal(t, equinixv1.ReasonConverging, next.Status.Conditions[0].Reason)

	require.NoError(t, cache.Update(store.stored))
	assert.Same(t, store.stored, h.latest(store.stored), "once cached, the cache's own copy")
}
