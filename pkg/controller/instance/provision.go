package instance

import (
	"errors"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/network"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

// ProvisionInstance drives an Instance through the provisioning chain: device,
// active, network (gate), install configuration, installer, Node, Ready.
func (h *Handler) ProvisionInstance(_ string, inst *equinixv1.Instance) (*equinixv1.Instance, error) {
	if inst == nil || inst.DeletionTimestamp != nil {
		return inst, nil
	}
	if !HasFinalizer(inst) {
		// The remove handler, registered first, adds the finalizer; its update
		// brings us back. No Metal call may happen before it is stored.
		return inst, nil
	}
	r := h.newRun(h.latest(inst))
	// The ports are a step of the same pass, after the lifecycle's, whatever
	// came of it: one status write carries both.
	return r.Finish(errors.Join(r.provision(), r.convergeNetwork()))
}

// HasFinalizer reports whether the cleanup chain's finalizer is stored: the
// equinix mode's on a Metal Instance, the hardware mode's on a server
// people own.
func HasFinalizer(inst *equinixv1.Instance) bool {
	if inst.Spec.Owned() {
		return slices.Contains(inst.Finalizers, FinalizerOwned)
	}
	return slices.Contains(inst.Finalizers, Finalizer)
}

func (r *run) provision() error {
	if r.Obj.Status.Status == "" {
		r.setPhase(equinixv1.PhasePending)
	}
	if r.Obj.Spec.Owned() {
		return r.provisionOwned()
	}
	if r.Obj.Status.JoinedAt != nil {
		r.storeDeviceGone()
		if c := conditions.Get(r.Obj.Status.Conditions, equinixv1.InstanceDeviceActive); c != nil && c.Reason == equinixv1.ReasonDeviceGone {
			// The sweep found the device gone: the server is lost whatever its
			// Node says, and stays failed until the pool replaces it.
			r.setPhase(equinixv1.PhaseFailed)
			return nil
		}
		// Joined servers are followed through their Node only: no Metal call per
		// reconcile (node heartbeats would turn into API traffic). The periodic
		// device sweep notices a device that disappears.
		if err := r.followProject(); err != nil {
			return err
		}
		return r.followNode()
	}
	client, err := r.metalClient()
	if client == nil || err != nil {
		return err
	}
	// One pass goes as far as the device allows, from create to the
	// installer, and its changes are stored in one status write at the end;
	// only intents (a create or a reinstall about to be sent) are written
	// before their call.
	if r.Obj.Status.InstanceID == "" {
		if done, err := r.ensureDevice(client); err != nil || !done {
			return err
		}
	}
	if r.installRunning() && (r.nodeRegisteredReady() || r.h.devices.readWithin(r.Obj.Status.InstanceID, installCheck*r.h.settings.PollInterval)) {
		// The installer runs for many minutes and nothing on the device
		// tells how it goes: the Node does. The device is looked at now
		// and then for a failure or a deletion until the Node is Ready;
		// from then on the Node tells, however long this pass took to
		// come (a large fleet's queue). A Node that registered but is not
		// Ready does not: its server may have been deleted (found by the
		// fault campaign: such an Instance waited for its Node forever).
		return r.followNode()
	}
	dev, err := r.refreshDevice(client)
	if dev == nil || err != nil {
		return err
	}
	if !r.deviceUsable(dev) {
		return nil
	}
	if r.Obj.Spec.BootMode != equinixv1.BootModeSingleBoot {
		if !conditions.IsTrue(r.Obj.Status.Conditions, equinixv1.InstanceNetworkConfigured) ||
			r.Obj.Status.NetworkConfigHash != networkHash(r.Obj, network.PhaseInstall) {
			// The ports must be in the state the installer needs first.
			r.setPhase(equinixv1.PhaseNetworking)
			if dev, err = r.convergeForInstall(client, dev); dev == nil || err != nil {
				return err
			}
		}
		if started, err := r.ensureInstall(client, dev); err != nil || !started {
			return err
		}
	}
	return r.followNode()
}

// installCheck is how many poll intervals apart the device of a server whose
// installer runs is read.
const installCheck = 4

// installRunning reports whether the device is active and its installer was
// started, and the node has not joined yet.
func (r *run) installRunning() bool {
	st := r.Obj.Status
	return st.JoinedAt == nil && conditions.IsTrue(st.Conditions, equinixv1.InstanceInstalling) &&
		conditions.IsTrue(st.Conditions, equinixv1.InstanceDeviceActive)
}

// followNode follows the Node and, once the server has joined, takes the
// join configuration off the device, in the same pass as the join itself.
func (r *run) followNode() error {
	if err := r.trackNode(); err != nil {
		return err
	}
	if r.Obj.Status.JoinedAt == nil || r.Obj.Status.UserdataCleared {
		return nil
	}
	r.h.reinstalls.forget(r.Obj.UID)
	return r.clearUserdata()
}

// clearUserdata removes the join configuration from the device after the
// node has joined: it holds the cluster's join token, which anyone with read
// access to the Metal project (and the device's metadata endpoint) could
// otherwise read for the server's whole life. UserdataCleared is set only
// once the API took the update; failures are retried, paced in the status.
func (r *run) clearUserdata() error {
	st := &r.Obj.Status
	if left := waitLeft(st.UserdataClearRetry, r.now()); left > 0 {
		r.Requeue(left)
		return nil
	}
	client, err := r.metalClient()
	if err != nil {
		return err
	}
	if client == nil {
		// The credentials condition says why; their Secret's watch, or
		// this requeue, brings the Instance back.
		r.Requeue(authRetry)
		return nil
	}
	empty := redact.Sensitive("")
	_, err = client.UpdateDevice(r.h.ctx, st.InstanceID, metal.DeviceUpdate{Userdata: &empty})
	switch {
	case err == nil, metal.IsNotFound(err):
		// A device that is gone took its userdata with it; the sweep
		// reports the device itself. Stored at once: the hardware chain
		// writes this status too, and a conflict must not clear twice.
		if err := r.PersistOutcome(func(st *equinixv1.InstanceStatus) {
			st.UserdataCleared = true
			st.UserdataClearRetry = nil
		}); err != nil {
			return err
		}
	default:
		// From twice the poll interval (30s by default), doubling.
		wait := r.backOff(&st.UserdataClearRetry, err, equinixv1.ReasonUserdataNotCleared, 2*r.h.settings.PollInterval, maxUserdataClearBackoff)
		r.Eventf(equinixv1.ReasonUserdataNotCleared,
			"could not clear the join configuration from device %s's userdata (%s); retrying in %s",
			st.InstanceID, failure.Message(err), wait.Round(time.Second))
	}
	return nil
}

// deviceUsable maps the device state onto the Instance and says whether the
// chain can go on.
func (r *run) deviceUsable(dev *metal.Device) bool {
	switch dev.State {
	case metal.DeviceStateQueued, metal.DeviceStateProvisioning:
		r.setPhase(equinixv1.PhaseProvisioning)
		r.SetCondition(equinixv1.InstanceDeviceActive, metav1.ConditionFalse, equinixv1.ReasonProvisioning,
			fmt.Sprintf("device %s is %s (%.0f%%)", dev.ID, dev.State, dev.ProvisioningPercentage))
		r.poll()
		return false
	case metal.DeviceStateFailed:
		r.setPhase(equinixv1.PhaseFailed)
		r.SetCondition(equinixv1.InstanceDeviceActive, metav1.ConditionFalse, equinixv1.ReasonProvisionFailed,
			fmt.Sprintf("Equinix Metal could not provision device %s (plan %s, metro %s); the pool replaces this server",
				dev.ID, r.Obj.Spec.Plan, r.Obj.Spec.Metro))
		return false
	case metal.DeviceStateActive:
		r.SetCondition(equinixv1.InstanceDeviceActive, metav1.ConditionTrue, equinixv1.ReasonDeviceActive,
			fmt.Sprintf("device %s is active", dev.ID))
		if r.Obj.Status.DeviceActiveAt == nil {
			r.Obj.Status.DeviceActiveAt = nowTime(r)
		}
		return true
	case metal.DeviceStateReinstalling:
		r.SetCondition(equinixv1.InstanceDeviceActive, metav1.ConditionFalse, equinixv1.ReasonReinstalling,
			fmt.Sprintf("device %s is reinstalling", dev.ID))
		r.poll()
		return r.Obj.Status.InstallRequestedAt != nil
	case metal.DeviceStateDeprovisioning, metal.DeviceStateDeleted:
		r.deviceGone(fmt.Sprintf("device %s is being deleted outside the addon", dev.ID))
		return false
	default: // inactive, powering_on, powering_off
		if r.Obj.OffOnRequest() || r.Obj.Status.LastPowerAction.InFlight() {
			r.SetCondition(equinixv1.InstanceDeviceActive, metav1.ConditionFalse, equinixv1.ReasonPoweredOffOnRequest,
				fmt.Sprintf("device %s is %s on request (spec.powerState %s)", dev.ID, dev.State, r.Obj.Spec.WantedPowerState()))
			r.Requeue(4 * r.h.settings.PollInterval)
			return false
		}
		r.SetCondition(equinixv1.InstanceDeviceActive, metav1.ConditionFalse, equinixv1.ReasonPoweredOff,
			fmt.Sprintf("device %s is %s; power it on in Equinix Metal, or delete the Instance to replace it", dev.ID, dev.State))
		r.Requeue(4 * r.h.settings.PollInterval)
		return false
	}
}

// deviceGone records that the device no longer exists; the pool replaces the
// Instance.
func (r *run) deviceGone(message string) {
	r.setPhase(equinixv1.PhaseFailed)
	r.Obj.Status.DeviceState = string(metal.DeviceStateDeleted)
	r.SetCondition(equinixv1.InstanceDeviceActive, metav1.ConditionFalse, equinixv1.ReasonDeviceGone, message)
}
