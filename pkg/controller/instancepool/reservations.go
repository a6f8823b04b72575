package instancepool

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
)

// replaceDroppedReservations replaces the servers still waiting for a
// device on a hardware reservation the pool no longer lists: an Instance's
// reservation cannot change, so the way to act on a fixed list (a
// reservation that was used already, or of another plan) is a new Instance,
// which takes the next reservation of the list. A server with a device
// keeps its reservation whatever the list says.
func (r *poolRun) replaceDroppedReservations() error {
	listed := map[string]bool{}
	for _, id := range r.Obj.Spec.HardwareReservationIDs {
		listed[id] = true
	}
	for _, inst := range active(r.insts) {
		id := inst.Spec.HardwareReservationID
		if id == "" || listed[id] || !waitingForDevice(inst) {
			continue
		}
		if err := r.deleteInstance(inst, equinixv1.ReasonReplacing, fmt.Sprintf(
			"replacing instance %s: it waits for a device on hardware reservation %s, which the pool no longer lists", inst.Name, id)); err != nil {
			return err
		}
	}
	return nil
}

// waitingForDevice reports whether an Instance has no device and no create
// in flight: none was sent yet, or each was refused (which stores nothing).
func waitingForDevice(inst *equinixv1.Instance) bool {
	if inst.Status.InstanceID != "" {
		return false
	}
	c := conditions.Get(inst.Status.Conditions, equinixv1.InstanceDeviceCreated)
	if c == nil {
		return true
	}
	return c.Status == metav1.ConditionFalse && c.Reason != equinixv1.ReasonDeviceGone && c.Reason != equinixv1.ReasonDuplicateDevices
}
