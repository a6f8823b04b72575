package equinixmetal

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// deleteDevices deletes every device of this Instance: the recorded one and
// any other carrying its tag (a create whose answer was lost). It reports
// whether all are confirmed gone.
func (r *run) deleteDevices(client metal.Client) (bool, error) {
	ids := map[string]bool{}
	if r.Obj.Status.InstanceID != "" {
		ids[r.Obj.Status.InstanceID] = true
	}
	tagged, err := client.ListDevices(r.p.ctx, metal.ListDevicesOptions{Tag: equinixv1.InstanceTag(string(r.Obj.UID))})
	if err != nil {
		return false, r.metalFailure("listing the Instance's devices to delete them", equinixv1.InstanceDeleting, err)
	}
	listed := map[string]bool{}
	for _, d := range tagged {
		ids[d.ID] = true
		listed[d.ID] = true
	}
	sorted := make([]string, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	sort.Strings(sorted)
	allGone := true
	for _, id := range sorted {
		gone, err := r.deleteDevice(client, id, listed[id])
		if err != nil {
			return false, err
		}
		allGone = allGone && gone
	}
	return allGone, nil
}

func (r *run) deleteDevice(client metal.Client, id string, listed bool) (bool, error) {
	dev, err := client.GetDevice(r.p.ctx, id)
	switch {
	case metal.IsNotFound(err):
		return true, nil
	case failure.ClassOf(err) == failure.Forbidden && !listed:
		// 403 for a device the tag list no longer shows: deleted.
		return true, nil
	case err != nil:
		return false, r.metalFailure("reading device "+id+" before deleting it", equinixv1.InstanceDeleting, err)
	}
	if dev.State == metal.DeviceStateDeprovisioning || dev.State == metal.DeviceStateDeleted {
		return false, nil
	}
	if err := client.DeleteDevice(r.p.ctx, id, false); err != nil {
		if metal.IsNotFound(err) {
			return true, nil
		}
		if failure.ClassOf(err) == failure.Busy {
			r.SetCondition(equinixv1.InstanceDeleting, metav1.ConditionTrue, equinixv1.ReasonWaitingForProvisioning,
				fmt.Sprintf("Equinix Metal refuses to delete device %s while it is %s; retrying", id, dev.State))
		}
		return false, r.metalFailure("deleting device "+id, equinixv1.InstanceDeleting, err)
	}
	r.Eventf(equinixv1.ReasonDeviceDeleted, "deleting device %s", id)
	return false, nil
}

// noDeviceRequested reports whether no device create was ever sent for this
// Instance: the project is recorded (and stored) before the first create, a
// refused create stored nothing, and an adopted or created device has an ID.
func (r *run) noDeviceRequested() bool {
	st := &r.Obj.Status
	if st.InstanceID != "" || st.ProjectID != "" {
		return false
	}
	c := conditions.Get(st.Conditions, equinixv1.InstanceDeviceCreated)
	return c == nil || (c.Status == metav1.ConditionFalse && c.Reason != equinixv1.ReasonDeviceGone && c.Reason != equinixv1.ReasonDuplicateDevices)
}
