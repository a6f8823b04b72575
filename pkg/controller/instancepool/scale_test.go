package instancepool

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/reconcile"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
)

// apiInstances is the API server's side of a pool's Instances: List
// answers what it holds, Create adds to it. Each create waits until the
// others of its batch (slowStart) are on their way too, or a while has
// passed, so that creates sent one after the other show as never more
// than one in flight.
type apiInstances struct {
	equinixcontrollers.InstanceController
	mu       sync.Mutex
	live     []equinixv1.Instance
	created  []*equinixv1.Instance
	refuse   error
	started  atomic.Int32
	inFlight atomic.Int32
	// most is the most creates in flight at once.
	most atomic.Int32
	// batchEnds are the calls at which each batch ends, 1-based.
	batchEnds []int32
}

func (a *apiInstances) List(metav1.ListOptions) (*equinixv1.InstanceList, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return &equinixv1.InstanceList{Items: append([]equinixv1.Instance(nil), a.live...)}, nil
}

func (a *apiInstances) Create(inst *equinixv1.Instance) (*equinixv1.Instance, error) {
	n := a.started.Add(1)
	in := a.inFlight.Add(1)
	defer a.inFlight.Add(-1)
	raise(&a.most, in)
	end := n
	for _, e := range a.batchEnds {
		if e >= n {
			end = e
			break
		}
	}
	for deadline := time.Now().Add(5 * time.Second); a.started.Load() < end && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if a.refuse != nil {
		return nil, a.refuse
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.live = append(a.live, *inst)
	a.created = append(a.created, inst)
	return inst, nil
}

// raise sets v to n if n is more.
func raise(v *atomic.Int32, n int32) {
	for m := v.Load(); n > m; m = v.Load() {
		if v.CompareAndSwap(m, n) {
			return
		}
	}
}

type ownedNames struct{ provision.Provider }

func (ownedNames) Names() provision.Names {
	return provision.Names{Instance: "instance-owned", Pool: "instancepool-owned"}
}

func scaleRun(pool *equinixv1.InstancePool, api *apiInstances) *poolRun {
	h := &Handler{provider: ownedNames{}, instances: api, recorder: record.NewFakeRecorder(100), statusPacing: newStatusPacing()}
	return &poolRun{Pass: reconcile.NewPass(h.kind(), pool), h: h}
}

func poolOf(count int32) *equinixv1.InstancePool {
	p := &equinixv1.InstancePool{ObjectMeta: metav1.ObjectMeta{Name: "rack"}}
	p.Spec.Count = count
	return p
}

func member(name string) equinixv1.Instance {
	return equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{equinixv1.LabelPool: "rack"}},
		Spec: equinixv1.InstanceSpec{PoolName: "rack"}}
}

func batchEnds(n int) []int32 {
	var out []int32
	total := int32(0)
	for _, b := range slowStart(n) {
		total += int32(len(b))
		out = append(out, total)
	}
	return out
}

// A pool grown from 3 to 20 creates its 17 missing Instances in one pass,
// each batch's creates at once, counted on the API server's list: the
// cache, which shows none of the pool's Instances yet, is not what is
// counted, and the next pass over the same stale cache creates nothing.
func TestScaleUpCreatesTheMissingInstancesInOnePass(t *testing.T) {
	api := &apiInstances{live: []equinixv1.Instance{member("rack-a"), member("rack-b"), member("rack-c")}, batchEnds: batchEnds(17)}
	require.NoError(t, scaleRun(poolOf(20), api).scale(now))
	require.Len(t, api.created, 17)
	names := map[string]bool{}
	for _, inst := range api.created {
		names[inst.Name] = true
		assert.Equal(t, "rack", inst.Spec.PoolName)
		assert.Equal(t, []string{"wrangler.cattle.io/instance-owned-remove"}, inst.Finalizers)
	}
	assert.Len(t, names, 17, "every Instance has a name of its own")
	assert.EqualValues(t, 8, api.most.Load(), "the creates of a batch (1, 2, 4, 8, 2) are sent together")

	require.NoError(t, scaleRun(poolOf(20), api).scale(now))
	assert.Len(t, api.created, 17, "a second pass over a cache that still shows none creates nothing more")
}

// A create refused (a webhook down, a quota) stops the pass after its
// batch: the first batch is one create, so a refusal for all is sent once.
func TestScaleUpStopsAtTheFirstRefusal(t *testing.T) {
	api := &apiInstances{refuse: errors.New("admission webhook unavailable"), batchEnds: batchEnds(20)}
	err := scaleRun(poolOf(20), api).scale(now)
	require.ErrorContains(t, err, "admission webhook unavailable")
	assert.EqualValues(t, 1, api.started.Load())
}

// The hardware reservations of Instances created together are picked one
// after the other: no two take the same.
func TestInstancesCreatedTogetherTakeDistinctReservations(t *testing.T) {
	pool := poolOf(3)
	pool.Spec.HardwareReservationIDs = []string{"r1", "r2", "r3"}
	api := &apiInstances{batchEnds: batchEnds(3)}
	require.NoError(t, scaleRun(pool, api).scale(now))
	var got []string
	for _, inst := range api.created {
		got = append(got, inst.Spec.HardwareReservationID)
	}
	assert.ElementsMatch(t, []string{"r1", "r2", "r3"}, got)
}

func TestSlowStart(t *testing.T) {
	assert.Empty(t, slowStart(0))
	assert.Equal(t, [][]int{{0}}, slowStart(1))
	assert.Equal(t, [][]int{{0}, {1, 2}, {3, 4, 5, 6}, {7, 8, 9, 10, 11, 12, 13, 14}, {15, 16, 17, 18, 19}}, slowStart(20))
}
