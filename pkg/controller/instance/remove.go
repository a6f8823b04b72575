package instance

import (
	"fmt"
	"sort"
	"time"

	"github.com/rancher/wrangler/v3/pkg/generic"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// RemoveInstance is the cleanup chain: it deletes the device, waits until
// Equinix Metal no longer has it, then deletes the Node and the Instance's
// Secret. Until every step is confirmed the finalizer stays, so a paid server
// is never forgotten; a 401/403 in particular never lets it go.
func (h *Handler) RemoveInstance(_ string, inst *equinixv1.Instance) (*equinixv1.Instance, error) {
	r := h.newRun(inst)
	done, err := r.cleanup()
	updated, perr := r.Finish(err)
	if perr != nil || err != nil {
		return updated, perr
	}
	if !done {
		// ErrSkip keeps the finalizer without reporting an error; Finish has
		// scheduled the next look.
		return updated, generic.ErrSkip
	}
	if inst.DeletionTimestamp != nil {
		metrics.DeleteDuration.Observe(time.Since(inst.DeletionTimestamp.Time).Seconds())
	}
	return updated, nil
}

func (r *run) cleanup() (bool, error) {
	if r.Obj.Spec.Owned() {
		return r.cleanupOwned()
	}
	if r.Obj.Status.Status != equinixv1.PhaseDeleting {
		r.setPhase(equinixv1.PhaseDeleting)
		r.SetCondition(equinixv1.InstanceDeleting, metav1.ConditionTrue, equinixv1.ReasonDeleting,
			fmt.Sprintf("removing device %q and node %s", r.Obj.Status.InstanceID, r.Obj.Name))
	}
	if r.noDeviceRequested() {
		// Nothing was ever asked of Equinix Metal, so there is nothing to
		// release there: no credentials are needed to let the Instance go.
		return true, r.deletePasswordSecret()
	}
	if done, err := r.maintenance(); err != nil || !done {
		return false, err
	}
	client, err := r.metalClient()
	if client == nil || err != nil {
		r.Requeue(authRetry)
		return false, err
	}
	gone, err := r.deleteDevices(client)
	if err != nil || !gone {
		if err == nil && r.After() == 0 {
			r.poll()
		}
		return false, err
	}
	if err := r.deleteNode(); err != nil {
		return false, err
	}
	// The device's ports are gone with it: VLANs only it used can go too.
	if err := r.collectVLANs(client); err != nil {
		return false, r.metalFailure("deleting VLANs no longer used", equinixv1.InstanceDeleting, err)
	}
	if err := r.deletePasswordSecret(); err != nil {
		return false, err
	}
	return true, nil
}

// deleteDevices deletes every device of this Instance: the recorded one and
// any other carrying its tag (a create whose answer was lost). It reports
// whether all are confirmed gone.
func (r *run) deleteDevices(client metal.Client) (bool, error) {
	ids := map[string]bool{}
	if r.Obj.Status.InstanceID != "" {
		ids[r.Obj.Status.InstanceID] = true
	}
	tagged, err := client.ListDevices(r.h.ctx, metal.ListDevicesOptions{Tag: equinixv1.InstanceTag(string(r.Obj.UID))})
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
	dev, err := client.GetDevice(r.h.ctx, id)
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
	if err := client.DeleteDevice(r.h.ctx, id, false); err != nil {
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

// deleteNode removes the Node only if it is this Instance's (name and label).
func (r *run) deleteNode() error {
	name := r.Obj.NodeName()
	if name == "" {
		return nil
	}
	node, err := r.h.nodes.Cache().Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading node %s: %w", name, err)
	}
	if !common.OwnedNode(node, r.Obj) {
		return nil
	}
	err = r.h.nodes.Delete(node.Name, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &node.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting node %s: %w", node.Name, err)
	}
	if err == nil {
		r.Eventf(equinixv1.ReasonNodeDeleted, "deleted node %s after its device was gone", node.Name)
	}
	return nil
}

// deletePasswordSecret deletes the console Secret if it is this Instance's
// (its owner reference), and only that version of it (UID precondition).
func (r *run) deletePasswordSecret() error {
	name, ns := r.Obj.Status.PasswordSecret, r.h.settings.Namespace
	if name == "" {
		name = r.Obj.Name + "-console"
	}
	sec, err := r.h.secrets.Cache().Get(ns, name)
	if apierrors.IsNotFound(err) {
		// Never made, gone, or not the addon's (the cache holds only
		// labelled Secrets); the garbage collector deletes an owned one
		// the cache has not seen yet.
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Secret %s/%s: %w", ns, name, err)
	}
	if !ownedBy(sec.OwnerReferences, r.Obj) {
		return nil
	}
	err = r.h.secrets.Delete(ns, name, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &sec.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting Secret %s/%s: %w", ns, name, err)
	}
	return nil
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
