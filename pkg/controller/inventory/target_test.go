package inventory

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	hardwarev1 "github.com/harvester/harvester-equinix-addon/pkg/apis/hardware/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
)

func targetOf(inv *seederv1alpha1.Inventory) *target {
	return (&Handler{}).newTarget(inv, time.Unix(1_800_000_000, 0), 0)
}

// requested is an Inventory whose spec asks for op at generation gen,
// after a last request of action at lastGen under job.
func requested(op string, gen int64, job string, last hardwarev1.PowerAction, lastGen int64) *seederv1alpha1.Inventory {
	inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: seederv1alpha1.InventoryNamespace, Name: "node-1", Generation: gen}}
	inv.Spec.PowerActionRequested = op
	inv.Status.PowerAction = seederv1alpha1.PowerActionDetails{LastJobName: job, LastActionStatus: seederv1alpha1.ActionStatusComplete}
	if last != "" {
		inv.Status.Hardware = &seederv1alpha1.HardwareStatus{}
		inv.Status.Hardware.LastPowerAction = &hardwarev1.PowerActionStatus{Action: last, Result: hardwarev1.PowerResultSucceeded, ObservedGeneration: lastGen}
	}
	return inv
}

// A request is new when Harvester cleared lastJobName, or when the spec
// changed its operation since the last request (Harvester's status write
// after its spec write met a conflict). The same operation in a spec
// changed otherwise (a UI edit sends the whole object back), or a job
// another controller named, is no new request.
func TestWhichRequestIsNew(t *testing.T) {
	for _, tc := range []struct {
		name string
		inv  *seederv1alpha1.Inventory
		want hardwarev1.PowerAction
	}{
		{"nothing asked", requested("", 1, "", "", 0), ""},
		{"Harvester cleared the job", requested(seederv1alpha1.PowerOperationReboot, 2, "", hardwarev1.PowerActionReboot, 2), hardwarev1.PowerActionReboot},
		{"the first one", requested(seederv1alpha1.PowerOperationShutdown, 1, "", "", 0), hardwarev1.PowerActionOff},
		{"taken up already", requested(seederv1alpha1.PowerOperationShutdown, 2, "node-1-shutdown-x", hardwarev1.PowerActionOff, 2), ""},
		{"another operation, job not cleared", requested(seederv1alpha1.PowerOperationPowerOn, 3, "node-1-shutdown-x", hardwarev1.PowerActionOff, 2), hardwarev1.PowerActionOn},
		{"the same operation, spec edited", requested(seederv1alpha1.PowerOperationReboot, 5, "node-1-reboot-x", hardwarev1.PowerActionReboot, 2), ""},
		{"Seeder's job", requested(seederv1alpha1.PowerOperationReboot, 7, "seeder-job", "", 0), ""},
	} {
		got, ok := targetOf(tc.inv).PowerRequest()
		assert.Equal(t, tc.want != "", ok, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
}

// Taking a request up removes actionStatus (the UI shows the host as
// stopping, starting or rebooting while the key is absent) and names it;
// its end says how it went and which operation it was.
func TestPowerProtocolFields(t *testing.T) {
	tg := targetOf(requested(seederv1alpha1.PowerOperationShutdown, 2, "", hardwarev1.PowerActionReboot, 1))
	tg.PowerAccepted(hardwarev1.PowerActionOff)
	pa := tg.Obj.Status.PowerAction
	assert.Empty(t, pa.LastActionStatus)
	assert.Regexp(t, `^node-1-shutdown-\w+$`, pa.LastJobName)
	tg.PowerEnded(hardwarev1.PowerActionOff, false)
	assert.Equal(t, seederv1alpha1.PowerActionDetails{LastJobName: pa.LastJobName, LastActionStatus: seederv1alpha1.ActionStatusFailed,
		LastActionRequested: seederv1alpha1.PowerOperationShutdown}, tg.Obj.Status.PowerAction)
	tg.PowerEnded(hardwarev1.PowerActionOff, true)
	assert.Equal(t, seederv1alpha1.ActionStatusComplete, tg.Obj.Status.PowerAction.LastActionStatus)
	for _, op := range []string{seederv1alpha1.PowerOperationShutdown, seederv1alpha1.PowerOperationPowerOn, seederv1alpha1.PowerOperationReboot} {
		a, ok := actionOf(op)
		assert.True(t, ok)
		assert.Equal(t, op, operationOf(a))
	}
}

// The Inventory's Events name it with its group, version and namespace:
// the apiserver keeps an Event of a namespaced object in its namespace.
func TestInventoryReference(t *testing.T) {
	ref := targetOf(requested("", 1, "", "", 0)).Reference()
	assert.Equal(t, "metal.harvesterhci.io/v1alpha1", ref.APIVersion)
	assert.Equal(t, "Inventory", ref.Kind)
	assert.Equal(t, seederv1alpha1.InventoryNamespace, ref.Namespace)
}

// After Harvester's powerAction wrote a request into the spec, the chain
// leaves the status alone for requestGrace (Harvester's own status write
// follows, and would meet a conflict), and takes a request from the spec
// alone only after it.
func TestRequestGrace(t *testing.T) {
	c := newSpecClock()
	at := time.Unix(1_800_000_000, 0)
	inv := requested(seederv1alpha1.PowerOperationPowerOn, 3, "node-1-shutdown-x", hardwarev1.PowerActionOff, 2)
	inv.Status.Hardware.ObservedGeneration = 2
	assert.Equal(t, requestGrace, c.settling("k", inv, at))
	assert.Equal(t, requestGrace-time.Second, c.settling("k", inv, at.Add(time.Second)))
	assert.Zero(t, c.settling("k", inv, at.Add(requestGrace)))

	tg := (&Handler{}).newTarget(inv, at, time.Second)
	_, ok := tg.PowerRequest()
	assert.False(t, ok, "within the grace, the spec alone is no request yet")
	assert.Equal(t, time.Second, tg.After())
	_, ok = (&Handler{}).newTarget(inv, at, 0).PowerRequest()
	assert.True(t, ok)

	inv.ResourceVersion = "9"
	assert.Zero(t, c.settling("k", inv, at), "another write came after the spec's: nothing to wait for")
	inv.Generation, inv.ResourceVersion = 4, "10"
	assert.Equal(t, requestGrace, c.settling("k", inv, at))
	inv.Status.Hardware.ObservedGeneration = 4
	assert.Zero(t, c.settling("k", inv, at), "a status written for this spec: nothing to wait for")
	inv.Spec.PowerActionRequested = ""
	inv.Generation = 5
	assert.Zero(t, c.settling("k", inv, at), "no power request: nothing to wait for")
}

// A first request (no job name yet) waits for Harvester's status write too:
// taken at once, its intent's write would make that write fail.
func TestFirstRequestWaitsForHarvestersStatusWrite(t *testing.T) {
	inv := requested(seederv1alpha1.PowerOperationReboot, 1, "", "", 0)
	_, ok := (&Handler{}).newTarget(inv, time.Unix(1_800_000_000, 0), time.Second).PowerRequest()
	assert.False(t, ok)
	_, ok = (&Handler{}).newTarget(inv, time.Unix(1_800_000_000, 0), 0).PowerRequest()
	assert.True(t, ok)
}

// The addon's own job names are told from Seeder's (generateName's five
// random characters), so a request the addon took is never taken over as
// Seeder's. One whose record under status.hardware was dropped (a write
// the apiserver stripped while the live CRD lacked the field) ends failed
// with a Warning, nothing sent again: a second command could switch the
// server twice.
func TestAddonJobsAreNotTakenOverAsSeeders(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	pending := func(job string) *seederv1alpha1.Inventory {
		inv := requested(seederv1alpha1.PowerOperationShutdown, 2, job, "", 0)
		inv.Status.PowerAction.LastActionStatus = ""
		return inv
	}
	own := (&Handler{}).newTarget(pending(""), at, 0)
	own.PowerAccepted(hardwarev1.PowerActionOff)
	ownJob := own.Obj.Status.PowerAction.LastJobName
	for _, tc := range []struct {
		job   string
		addon bool
	}{
		{ownJob, true},
		{"node-1-reboot-" + strconv.FormatInt(at.UnixMilli(), 36), true},
		{"node-1-shutdown-x7k2q", false},
		{"node-1-shutdown-zzzzz", false},
		{"node-2-shutdown-" + strconv.FormatInt(at.UnixMilli(), 36), false},
		{"node-1-shutdown-", false},
		{"seeder-job", false},
	} {
		assert.Equal(t, tc.addon, targetOf(pending(tc.job)).addonJob(), tc.job)
	}

	// Seeder's pending request is taken over.
	action, ok := targetOf(pending("node-1-shutdown-x7k2q")).PowerRequest()
	assert.True(t, ok)
	assert.Equal(t, hardwarev1.PowerActionOff, action)

	// The addon's, its record lost, ends failed and is not sent.
	rec := record.NewFakeRecorder(4)
	lost := (&Handler{recorder: rec}).newTarget(pending(ownJob), at, 0)
	_, ok = lost.PowerRequest()
	assert.False(t, ok, "a request whose record was lost was sent again")
	assert.Equal(t, seederv1alpha1.ActionStatusFailed, lost.Obj.Status.PowerAction.LastActionStatus)
	assert.Equal(t, ownJob, lost.Obj.Status.PowerAction.LastJobName)
	select {
	case e := <-rec.Events:
		assert.Contains(t, e, "Warning "+equinixv1.ReasonPowerRequestLost)
	default:
		t.Error("no Event says the request's record was lost")
	}

	// The addon's, its record kept and the command sent, is followed, not
	// taken again.
	kept := pending(ownJob)
	kept.Status.Hardware = &seederv1alpha1.HardwareStatus{}
	kept.Status.Hardware.LastPowerAction = &hardwarev1.PowerActionStatus{Action: hardwarev1.PowerActionOff, Result: hardwarev1.PowerResultSent, ObservedGeneration: 2}
	_, ok = targetOf(kept).PowerRequest()
	assert.False(t, ok)
}

// No power request is taken while the live CRD's schema is unknown,
// lacking, or changed less than schemaSettle ago: the apiserver may still
// drop the request's record.
func TestPowerRequestsWaitForTheSchemaToSettle(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	s := &inventorySchema{now: func() time.Time { return at }}
	h := &Handler{schema: s}
	inv := requested(seederv1alpha1.PowerOperationShutdown, 1, "", "", 0)
	tg := h.newTarget(inv.DeepCopy(), at, 0)
	_, ok := tg.PowerRequest()
	assert.False(t, ok, "taken before the schema was checked")
	assert.Equal(t, schemaRecheck, tg.After())

	s.completed(at.Add(-5 * time.Second))
	tg = h.newTarget(inv.DeepCopy(), at, 0)
	_, ok = tg.PowerRequest()
	assert.False(t, ok, "taken 5s after the schema changed")
	assert.Equal(t, schemaSettle-5*time.Second, tg.After())

	_, ok = h.newTarget(inv.DeepCopy(), at.Add(schemaSettle), 0).PowerRequest()
	assert.True(t, ok, "held once the schema settled")

	s.forget()
	_, ok = h.newTarget(inv.DeepCopy(), at.Add(time.Hour), 0).PowerRequest()
	assert.False(t, ok, "taken while Seeder runs and may apply its own schema")
}
