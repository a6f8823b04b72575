package equinixmetal

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
)

// enqueued is statusStore that records the Instances brought back.
type enqueued struct {
	statusStore
	names []string
}

func (e *enqueued) Enqueue(name string) { e.names = append(e.names, name) }

// The sweep writes no status: it notes a gone device and brings the
// Instance back, and the Instance's own pass, the one writer of its
// status, stores it: the server is failed, its device gone, and the pool
// replaces it. The note is dropped once that status is stored, not before
// (a write that fails keeps it for the next pass).
func TestTheSweepsGoneDeviceIsStoredByThePass(t *testing.T) {
	store := &enqueued{}
	h := &harness{Provider: Provider{instances: store, goneDevices: newGoneDevices()}, statuses: store, recorder: record.NewFakeRecorder(10)}
	joined := metav1.Now()
	inst := &equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: "pool-abcdefgh", UID: "uid-1"}}
	inst.Status.InstanceID, inst.Status.JoinedAt, inst.Status.Status = "device-1", &joined, equinixv1.PhaseManaged

	require.NoError(t, h.MarkDeviceGone(inst))
	assert.Equal(t, []string{"pool-abcdefgh"}, store.names, "the Instance is brought back")
	assert.Nil(t, store.stored, "the sweep writes no status")

	store.down = true
	r := h.newRun(inst)
	kept, err := r.Follow()
	require.NoError(t, err)
	assert.False(t, kept)
	_, err = r.Finish(nil)
	require.Error(t, err)
	_, noted := h.goneDevices.of(inst.UID)
	assert.True(t, noted, "a failed write keeps the note")

	store.down = false
	r = h.newRun(inst)
	kept, err = r.Follow()
	require.NoError(t, err)
	assert.False(t, kept)
	_, err = r.Finish(nil)
	require.NoError(t, err)
	st := store.stored.Status
	assert.Equal(t, equinixv1.PhaseFailed, st.Status)
	assert.Equal(t, "deleted", st.DeviceState)
	c := conditions.Get(st.Conditions, equinixv1.InstanceDeviceActive)
	require.NotNil(t, c)
	assert.Equal(t, equinixv1.ReasonDeviceGone, c.Reason)
	assert.Contains(t, c.Message, "device device-1 no longer exists in Equinix Metal")
	_, noted = h.goneDevices.of(inst.UID)
	assert.False(t, noted, "dropped once stored")

	r = h.newRun(store.stored)
	kept, err = r.Follow()
	require.NoError(t, err)
	assert.False(t, kept, "the stored condition keeps it failed")
	assert.Equal(t, equinixv1.PhaseFailed, r.Obj.Status.Status)
}
