package reconcile

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// apiserver stands in for the Instances' status endpoint: it keeps the
// stored object, counts writes and can refuse them.
type apiserver struct {
	stored   *equinixv1.Instance
	writes   int
	refuse   error
	enqueued map[string]time.Duration
}

func (a *apiserver) kind() Kind[*equinixv1.Instance, equinixv1.InstanceStatus] {
	return Kind[*equinixv1.Instance, equinixv1.InstanceStatus]{
		Name:       "instance",
		Status:     func(i *equinixv1.Instance) *equinixv1.InstanceStatus { return &i.Status },
		Conditions: func(i *equinixv1.Instance) *[]metav1.Condition { return &i.Status.Conditions },
		UpdateStatus: func(i *equinixv1.Instance) (*equinixv1.Instance, error) {
			if err := a.refuse; err != nil {
				a.refuse = nil
				return nil, err
			}
			a.writes++
			a.stored = i.DeepCopy()
			return i.DeepCopy(), nil
		},
		EnqueueAfter: func(name string, after time.Duration) { a.enqueued[name] = after },
		Recorder:     record.NewFakeRecorder(10),
	}
}

func newAPIServer() *apiserver {
	return &apiserver{stored: &equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: "i"}}, enqueued: map[string]time.Duration{}}
}

func TestRequeueKeepsTheShortest(t *testing.T) {
	a := newAPIServer()
	p := NewPass(a.kind(), a.stored)
	assert.Zero(t, p.After())
	p.Requeue(time.Minute)
	p.Requeue(time.Second * 5)
	p.Requeue(time.Hour)
	assert.Equal(t, 5*time.Second, p.After())
	p.Requeue(0)
	assert.Equal(t, time.Second, p.After(), "an immediate requeue waits a second, so a run never spins")
}

// A pass writes the status once at its end, and only when it changed; the
// object comes back when the pass asked, unless a step failed.
func TestFinishWritesOnceAndRequeues(t *testing.T) {
	a := newAPIServer()
	p := NewPass(a.kind(), a.stored)
	got, err := p.Finish(nil)
	require.NoError(t, err)
	assert.Zero(t, a.writes, "nothing changed, nothing written")
	assert.Equal(t, "i", got.Name)
	assert.Empty(t, a.enqueued)

	p = NewPass(a.kind(), a.stored)
	p.Status().Status = equinixv1.PhaseProvisioning
	p.Requeue(time.Minute)
	_, err = p.Finish(nil)
	require.NoError(t, err)
	assert.Equal(t, 1, a.writes)
	assert.Equal(t, time.Minute, a.enqueued["i"])

	p = NewPass(a.kind(), a.stored)
	p.Status().Status = equinixv1.PhaseManaged
	p.Requeue(time.Second)
	stepErr := errors.New("step failed")
	_, err = p.Finish(stepErr)
	assert.Same(t, stepErr, err)
	assert.Equal(t, 2, a.writes, "what the steps did before failing is stored")
	assert.Equal(t, time.Minute, a.enqueued["i"], "a failed pass is not brought back by its own request")
}

// A failed write returns the step's error with it; nothing is published,
// and the object is not brought back by the pass's own request.
func TestFinishAfterAFailedWrite(t *testing.T) {
	a := newAPIServer()
	p := NewPass(a.kind(), a.stored)
	published := 0
	p.OnStored(func(error) { published++ })
	p.Status().Status = equinixv1.PhaseManaged
	p.Requeue(time.Second)
	a.refuse = errors.New("connection refused")
	stepErr := errors.New("step failed")
	_, err := p.Finish(stepErr)
	require.ErrorIs(t, err, stepErr)
	assert.ErrorContains(t, err, "updating status of instance i: connection refused")
	assert.Zero(t, published)
	assert.Empty(t, a.enqueued)

	_, err = p.Finish(nil)
	require.NoError(t, err)
	assert.Equal(t, 1, published, "published once the status is stored")
}

// Persist writes an intent at once and takes the written object as the
// new working copy; Prepare fills each write, Wrote hears of it.
func TestPersistPreparesAndTells(t *testing.T) {
	a := newAPIServer()
	a.stored.Generation = 3
	k := a.kind()
	var before []string
	k.Prepare = func(i *equinixv1.Instance) { i.Status.ObservedGeneration = i.Generation }
	k.Wrote = func(stored *equinixv1.InstanceStatus, _ *equinixv1.Instance) { before = append(before, stored.Status) }
	p := NewPass(k, a.stored)
	require.True(t, p.Changed(), "observedGeneration is behind")
	require.NoError(t, p.Persist())
	assert.Equal(t, int64(3), a.stored.Status.ObservedGeneration)
	p.Status().Status = equinixv1.PhaseProvisioning
	require.NoError(t, p.Persist())
	require.NoError(t, p.Persist())
	assert.Equal(t, 2, a.writes)
	assert.Equal(t, []string{"", ""}, before)
	assert.Equal(t, equinixv1.PhaseProvisioning, p.Stored().Status)
}

// An outcome whose write met another writer's is put on the live object
// and written again, keeping what that writer stored.
func TestPersistOutcomeAfterAConflict(t *testing.T) {
	a := newAPIServer()
	k := a.kind()
	k.Get = func(string) (*equinixv1.Instance, error) { return a.stored.DeepCopy(), nil }
	p := NewPass(k, a.stored)
	a.stored.Status.NodeName = "written by another"
	a.refuse = apierrors.NewConflict(schema.GroupResource{Resource: "instances"}, "i", errors.New("changed"))
	require.NoError(t, p.PersistOutcome(func(st *equinixv1.InstanceStatus) { st.InstanceID = "device" }))
	assert.Equal(t, "device", a.stored.Status.InstanceID)
	assert.Equal(t, "written by another", a.stored.Status.NodeName)
}

// Hold lets the final write of a status wait: the pass asks to look again
// then, and writes nothing now.
func TestHoldDefersTheFinalWrite(t *testing.T) {
	a := newAPIServer()
	k := a.kind()
	hold := 5 * time.Second
	k.Hold = func(*equinixv1.Instance, *equinixv1.InstanceStatus) time.Duration { return hold }
	p := NewPass(k, a.stored)
	p.Status().Status = equinixv1.PhaseManaged
	p.Requeue(time.Minute)
	_, err := p.Finish(nil)
	require.NoError(t, err)
	assert.Zero(t, a.writes)
	assert.Equal(t, hold, a.enqueued["i"])

	hold = 0
	_, err = p.Finish(nil)
	require.NoError(t, err)
	assert.Equal(t, 1, a.writes)
}

// Quiet puts back what alone is not worth a write: a pass that changed
// only that writes nothing, and one that changed more writes it all.
func TestQuietLeavesAloneWhatAloneIsNoWrite(t *testing.T) {
	a := newAPIServer()
	kind := a.kind()
	kind.Quiet = func(next *equinixv1.Instance, stored *equinixv1.InstanceStatus) {
		if next.Status.Status == stored.Status {
			next.Status.DeviceState = stored.DeviceState
		}
	}
	p := NewPass(kind, a.stored)
	p.Obj.Status.DeviceState = "active"
	_, err := p.Finish(nil)
	require.NoError(t, err)
	assert.Zero(t, a.writes, "only the quiet field changed")

	p = NewPass(kind, a.stored)
	p.Obj.Status.DeviceState = "active"
	p.Obj.Status.Status = equinixv1.PhaseProvisioning
	_, err = p.Finish(nil)
	require.NoError(t, err)
	assert.Equal(t, 1, a.writes)
	assert.Equal(t, "active", a.stored.Status.DeviceState, "it rides along with another change")
}
