package inventory

import (
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	hardwarev1 "github.com/harvester/harvester-equinix-addon/pkg/apis/hardware/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/hardware"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/reconcile"
)

// target is an Inventory as the hardware steps see it (a hardware.Target
// and a hardware.RequestedPower): a node, or a server without one, whose
// BMC the Inventory names, and whose power Harvester's node action asks
// for one operation at a time.
type target struct {
	hardware.ObjectPass[*seederv1alpha1.Inventory, seederv1alpha1.InventoryStatus]
	// now names the requests taken up in this pass.
	now time.Time
	// settling is how long Harvester may still be writing the status of a
	// request it wrote into the spec (requestGrace): the status is left
	// alone meanwhile.
	settling time.Duration
	// schemaWait is how long the live CRD's schema is still to settle
	// (inventorySchema.settling): no power request is taken meanwhile.
	schemaWait time.Duration
}

// newTarget starts a pass over inv. Every status written is recorded in the
// handler's written, so that the next pass reads it even before the cache
// does; every write carries the status.status, the Stalled condition and
// the observed generation the rest implies; none is made while settling.
func (h *Handler) newTarget(inv *seederv1alpha1.Inventory, now time.Time, settling time.Duration) *target {
	kind := reconcile.Kind[*seederv1alpha1.Inventory, seederv1alpha1.InventoryStatus]{
		Name:       "Inventory",
		Status:     func(i *seederv1alpha1.Inventory) *seederv1alpha1.InventoryStatus { return &i.Status },
		Conditions: func(i *seederv1alpha1.Inventory) *[]metav1.Condition { return &i.Status.Conditions },
		UpdateStatus: func(i *seederv1alpha1.Inventory) (*seederv1alpha1.Inventory, error) {
			return h.inventories.UpdateStatus(i)
		},
		EnqueueAfter: func(name string, after time.Duration) { h.inventories.EnqueueAfter(inv.Namespace, name, after) },
		Recorder:     h.recorder,
		Prepare:      prepare,
		Wrote:        func(_ *seederv1alpha1.InventoryStatus, written *seederv1alpha1.Inventory) { h.written.Wrote(written) },
		Get: func(name string) (*seederv1alpha1.Inventory, error) {
			return h.inventories.Get(inv.Namespace, name, metav1.GetOptions{})
		},
		Hold:  func(*seederv1alpha1.Inventory, *seederv1alpha1.InventoryStatus) time.Duration { return settling },
		Quiet: quietLastPolled,
	}
	t := &target{
		ObjectPass: hardware.ObjectPass[*seederv1alpha1.Inventory, seederv1alpha1.InventoryStatus]{
			Pass: reconcile.NewPass(kind, inv), Kind: seederv1alpha1.InventoryKind, APIVersion: seederv1alpha1.SchemeGroupVersion.String(),
		},
		now:      now,
		settling: settling,
	}
	if h.schema != nil {
		t.schemaWait = h.schema.settling(now)
	}
	return t
}

// prepare fills what every write carries: the observed generation, and
// what Harvester and its UI read, derived from the conditions.
func prepare(inv *seederv1alpha1.Inventory) {
	st := &inv.Status
	if st.Hardware != nil {
		st.Hardware.ObservedGeneration = inv.Generation
	}
	st.Status = workflowStatus(inv)
	quarantineCondition(inv)
	stalled := stalledCondition(inv)
	conditions.Store(&st.Conditions, inv.Generation, stalled)
}

// quietLastPolled keeps the stored lastPolled when nothing else of the
// status changed: a poll that found nothing new writes nothing. Each write
// would move the Inventory's resourceVersion, and the UI's Save of a form
// opened before it would fail with a conflict; the poll's time rides along
// with the next write that something else makes.
func quietLastPolled(next *seederv1alpha1.Inventory, stored *seederv1alpha1.InventoryStatus) {
	hw := next.Status.Hardware
	if hw == nil || stored.Hardware == nil || equality.Semantic.DeepEqual(hw.LastPolled, stored.Hardware.LastPolled) {
		return
	}
	polled := hw.LastPolled
	hw.LastPolled = stored.Hardware.LastPolled
	if !equality.Semantic.DeepEqual(*stored, next.Status) {
		hw.LastPolled = polled
	}
}

// Hardware is the chain's record, under status.hardware.
func (t *target) Hardware() *hardwarev1.HardwareStatus {
	st := &t.Obj.Status
	if st.Hardware == nil {
		st.Hardware = &seederv1alpha1.HardwareStatus{}
	}
	return &st.Hardware.HardwareStatus
}

// Conditions are the working copy's conditions.
func (t *target) Conditions() []metav1.Condition { return t.Obj.Status.Conditions }

// ForwardsEvents is spec.events.enabled.
func (t *target) ForwardsEvents() bool { return t.Obj.Spec.Events.Enabled }

// Joined is false: the steps gate power on the node itself, when there is
// one (an Inventory may stand for a server without a node).
func (t *target) Joined() bool { return false }

// bmcPowerRecheck is the least time between two checks of a power
// action's effect on a BMC, whatever --poll-interval says (a second in a
// development setup). A server takes seconds to switch its power, a BMC
// reports it no sooner, and one check every 10 s is six reads a minute on
// the one session kept meanwhile, which no BMC minds.
const bmcPowerRecheck = 10 * time.Second

// schemaRecheck is how soon a power request held for the Inventory's
// schema is looked at again.
const schemaRecheck = 10 * time.Second

func (t *target) PowerRecheck(poll time.Duration) time.Duration { return max(poll, bmcPowerRecheck) }

// PowerRequest is spec.powerActionRequested when it is a new request:
// Harvester's powerAction cleared status.powerAction.lastJobName, or the
// operation changed with the spec since the last request was taken up (its
// status write after the spec's may have met a conflict, and Harvester
// told the user so, but the spec holds the request). The same operation
// in a spec changed for another reason (an edit in the UI sends the whole
// object back) is not a new request. A request Seeder took and never
// ended is one (seederRequestPending).
func (t *target) PowerRequest() (hardwarev1.PowerAction, bool) {
	action, ok := t.requested()
	if !ok {
		return "", false
	}
	if t.schemaWait > 0 {
		// The live CRD lacks the fields that record a request's intent
		// and progress (status.hardware), or gained them a moment ago and
		// the apiserver may still drop them: a command sent now could not
		// be stored, and the request would look new again. It waits for
		// the addon's schema, settled; SchemaCurrent says when it lacks.
		t.Requeue(t.schemaWait)
		return "", false
	}
	if t.lostRequest() {
		// The addon took this request, and its record is gone: whether
		// its command went out is not known, and sending it again could
		// switch the server twice. It ends failed; the user asks again.
		t.PowerEnded(action, false)
		t.Eventf(equinixv1.ReasonPowerRequestLost,
			"the %s request taken as job %s lost its record (status.hardware was dropped: the live CRD lacked it when it was written); "+
				"nothing is sent again, so it may or may not have been carried out: check the host's power and ask again",
			t.Obj.Spec.PowerActionRequested, t.Obj.Status.PowerAction.LastJobName)
		return "", false
	}
	if t.settling > 0 {
		// Harvester's own status write is likely on its way: taking the
		// request now would make it fail.
		t.Requeue(t.settling)
		return "", false
	}
	if holder := t.Obj.Labels[equinixv1.LabelClaimedBy]; holder != "" && !conditions.IsTrue(t.Obj.Status.Conditions, equinixv1.BMCNodeFound) {
		// A server a pool claimed is powered by its Instance only until
		// its node joined and is bound (booted, released); a request
		// here ends failed, nothing sent. Once bound, the request is a
		// node's: taken only in maintenance mode, where the pool leaves
		// the server alone.
		t.PowerAccepted(action)
		t.PowerEnded(action, false)
		t.Eventf(equinixv1.ReasonServerInPool, "the %s request was not carried out: server %s is claimed by Instance %s, whose pool switches its power",
			operationOf(action), t.Obj.Name, holder)
		return "", false
	}
	return action, true
}

// requested is the spec's power request when it is a new one (see
// PowerRequest), whether or not this pass may take it up.
func (t *target) requested() (hardwarev1.PowerAction, bool) {
	action, ok := actionOf(t.Obj.Spec.PowerActionRequested)
	if !ok {
		return "", false
	}
	last := t.Hardware().LastPowerAction
	if seederRequestPending(t) || t.lostRequest() {
		return action, true
	}
	if t.Obj.Status.PowerAction.LastJobName != "" &&
		(last == nil || last.ObservedGeneration == t.Obj.Generation || last.Action == action) {
		return "", false
	}
	return action, true
}

// PowerAccepted names the request and removes actionStatus: the UI shows
// the host as stopping, starting or rebooting while the key is absent.
func (t *target) PowerAccepted(action hardwarev1.PowerAction) {
	pa := &t.Obj.Status.PowerAction
	pa.LastJobName = t.Obj.Name + "-" + operationOf(action) + "-" + strconv.FormatInt(t.now.UnixMilli(), 36)
	pa.LastActionStatus = ""
}

// addonJobsSince is a time before the addon named any request: a job
// name's suffix read as milliseconds in base 36 is later only in the
// addon's names. Seeder's rufio Jobs take their names from generateName,
// whose five random characters read as under a day after 1970.
var addonJobsSince = time.Date(2020, time.January, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

// addonJob reports whether the addon named the request being carried out
// (PowerAccepted), as opposed to Seeder, whose pending requests are taken
// over.
func (t *target) addonJob() bool {
	name := t.Obj.Status.PowerAction.LastJobName
	for _, op := range []string{seederv1alpha1.PowerOperationShutdown, seederv1alpha1.PowerOperationPowerOn, seederv1alpha1.PowerOperationReboot} {
		suffix, ok := strings.CutPrefix(name, t.Obj.Name+"-"+op+"-")
		if !ok {
			continue
		}
		ms, err := strconv.ParseInt(suffix, 36, 64)
		return err == nil && ms >= addonJobsSince
	}
	return false
}

// lostRequest reports whether a request the addon took has no record
// left: no actionStatus yet, and no record under status.hardware, which
// the addon writes in the same write as the job's name. Only a write the
// apiserver stripped of status.hardware (the live CRD lacked it) leaves
// that.
func (t *target) lostRequest() bool {
	pa := t.Obj.Status.PowerAction
	return pa.LastJobName != "" && pa.LastActionStatus == "" && t.addonJob() && t.Hardware().LastPowerAction == nil
}

// PowerEnded says how the request ended: either value lets Harvester
// accept the next one.
func (t *target) PowerEnded(action hardwarev1.PowerAction, ok bool) {
	pa := &t.Obj.Status.PowerAction
	pa.LastActionStatus = seederv1alpha1.ActionStatusFailed
	if ok {
		pa.LastActionStatus = seederv1alpha1.ActionStatusComplete
	}
	pa.LastActionRequested = operationOf(action)
}

// actionOf maps Seeder's operations onto the chain's actions: shutdown is
// a hard power-off, as Seeder's is (the node is drained already).
func actionOf(operation string) (hardwarev1.PowerAction, bool) {
	switch operation {
	case seederv1alpha1.PowerOperationShutdown:
		return hardwarev1.PowerActionOff, true
	case seederv1alpha1.PowerOperationPowerOn:
		return hardwarev1.PowerActionOn, true
	case seederv1alpha1.PowerOperationReboot:
		return hardwarev1.PowerActionReboot, true
	}
	return "", false
}

func operationOf(action hardwarev1.PowerAction) string {
	switch action {
	case hardwarev1.PowerActionOff:
		return seederv1alpha1.PowerOperationShutdown
	case hardwarev1.PowerActionOn:
		return seederv1alpha1.PowerOperationPowerOn
	}
	return seederv1alpha1.PowerOperationReboot
}
