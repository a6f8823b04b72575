package inventory

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// What Seeder leaves on an Inventory it served, taken over once Seeder no
// longer runs: its finalizer, its conditions, and a power request it took
// and never reported.

// releaseSeederFinalizer removes Seeder's finalizer from the Inventory:
// only Seeder removes it, so once Seeder is gone an Inventory being
// deleted (Out-of-Band Access turned off) would stay Terminating for
// ever. A JSON patch that first tests the finalizer at its index, so that
// nothing else is removed if the list changed since read. It returns the
// Inventory as patched (inv when there was nothing to do).
func (h *Handler) releaseSeederFinalizer(inv *seederv1alpha1.Inventory) (*seederv1alpha1.Inventory, error) {
	i := slices.Index(inv.Finalizers, seederv1alpha1.SeederFinalizer)
	if i < 0 {
		return inv, nil
	}
	path := "/metadata/finalizers/" + strconv.Itoa(i)
	patch, err := json.Marshal([]map[string]string{
		{"op": "test", "path": path, "value": seederv1alpha1.SeederFinalizer},
		{"op": "remove", "path": path},
	})
	if err != nil {
		return nil, fmt.Errorf("building the patch of Inventory %s: %w", inv.Name, err)
	}
	out, err := h.inventories.Patch(inv.Namespace, inv.Name, types.JSONPatchType, patch)
	if err != nil {
		return nil, fmt.Errorf("removing Seeder's finalizer %s from Inventory %s: %w", seederv1alpha1.SeederFinalizer, inv.Name, err)
	}
	metrics.SeederLeftoversTakenOver.WithLabelValues(leftoverFinalizer).Inc()
	what := "it"
	if inv.DeletionTimestamp != nil {
		what = "its deletion, which waited for it,"
	}
	h.recorder.Eventf(out, "Normal", equinixv1.ReasonSeederFinalizerRemoved,
		"removed Seeder's finalizer %s: Seeder no longer runs, so nothing else would remove it and %s would never end; the addon serves this Inventory",
		seederv1alpha1.SeederFinalizer, what)
	return out, nil
}

// adoptSeederStatus drops from the pass's status the conditions Seeder
// wrote (they describe Seeder's rufio machine and jobs, which nothing
// reads any more; one with reason Error would hold the UI's banner), and
// says so once.
func adoptSeederStatus(t *target) {
	conds := t.Obj.Status.Conditions
	kept := slices.DeleteFunc(slices.Clone(conds), func(c metav1.Condition) bool {
		return slices.Contains(seederv1alpha1.SeederConditionTypes, c.Type)
	})
	if len(kept) == len(conds) {
		return
	}
	t.Obj.Status.Conditions = kept
	metrics.SeederLeftoversTakenOver.WithLabelValues(leftoverStatus).Inc()
	t.Eventf(equinixv1.ReasonSeederStatusTakenOver,
		"took over the status Seeder left: its %d conditions of its own machine and jobs are dropped; the addon's conditions say how the BMC is",
		len(conds)-len(kept))
}

// seederRequestPending reports whether the Inventory holds a power
// request Seeder took and never ended: a job name not the addon's with no
// actionStatus, and no request of the addon's under way. Seeder names its job when it
// takes a request and writes actionStatus when its job ends; stopped in
// between, it leaves the host Stopping, Starting or Rebooting in the UI
// for ever and Harvester refusing any other request. The addon then
// carries the request out itself.
func seederRequestPending(t *target) bool {
	pa := t.Obj.Status.PowerAction
	last := t.Hardware().LastPowerAction
	return pa.LastJobName != "" && pa.LastActionStatus == "" && !t.addonJob() && (last == nil || last.Done())
}

// adoptSeederRequest says when the pass takes over a request Seeder left
// pending (see seederRequestPending); the power step then carries it out
// as any new request: one command, under maintenance mode.
func adoptSeederRequest(t *target) {
	if _, ok := actionOf(t.Obj.Spec.PowerActionRequested); !ok || !seederRequestPending(t) {
		return
	}
	metrics.SeederLeftoversTakenOver.WithLabelValues(leftoverRequest).Inc()
	t.Eventf(equinixv1.ReasonSeederRequestTakenOver,
		"took over the %s request Seeder took as job %s and never ended: the addon carries it out now",
		t.Obj.Spec.PowerActionRequested, t.Obj.Status.PowerAction.LastJobName)
}
