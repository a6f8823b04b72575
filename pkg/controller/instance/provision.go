package instance

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/common"
	"github.com/harvester/harvester-equinix-addon/pkg/credentials"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// ProvisionInstance drives an Instance through the provisioning chain: device,
// active, network (gate), install configuration, installer, Node, Ready.
func (h *Handler) ProvisionInstance(_ string, inst *v1.Instance) (*v1.Instance, error) {
	if inst == nil || inst.DeletionTimestamp != nil {
		return inst, nil
	}
	if !HasFinalizer(inst) {
		// The remove handler, registered first, adds the finalizer; its update
		// brings us back. No Metal call may happen before it is stored.
		return inst, nil
	}
	r := h.newRun(inst)
	return r.finish(r.provision())
}

// HasFinalizer reports whether the cleanup chain's finalizer is stored.
func HasFinalizer(inst *v1.Instance) bool {
	for _, f := range inst.Finalizers {
		if f == Finalizer {
			return true
		}
	}
	return false
}

func (r *run) provision() error {
	if r.inst.Status.Status == "" {
		r.setPhase(v1.PhasePending)
	}
	if r.inst.Status.JoinedAt != nil {
		if c := conditions.Get(r.inst.Status.Conditions, v1.InstanceDeviceActive); c != nil && c.Reason == common.ReasonDeviceGone {
			// The sweep found the device gone: the server is lost whatever its
			// Node says, and stays failed until the pool replaces it.
			r.setPhase(v1.PhaseFailed)
			return nil
		}
		if !r.inst.Status.UserdataCleared {
			return r.clearUserdata()
		}
		// Joined servers are followed through their Node only: no Metal call per
		// reconcile (node heartbeats would turn into API traffic). The periodic
		// device sweep notices a device that disappears.
		return r.trackNode()
	}
	client, err := r.metalClient()
	if client == nil || err != nil {
		return err
	}
	if r.inst.Status.InstanceID == "" {
		if done, err := r.ensureDevice(client); err != nil || !done {
			return err
		}
	}
	dev, err := r.refreshDevice(client)
	if dev == nil || err != nil {
		return err
	}
	if !r.deviceUsable(dev) {
		return nil
	}
	if r.inst.Spec.BootMode != v1.BootModeSingleBoot {
		if !conditions.IsTrue(r.inst.Status.Conditions, v1.InstanceNetworkConfigured) {
			// The networking chain converges the ports and sets the condition;
			// its status update brings us back.
			r.setPhase(v1.PhaseNetworking)
			return nil
		}
		if started, err := r.ensureInstall(client, dev); err != nil || !started {
			return err
		}
	}
	return r.trackNode()
}

// clearUserdata removes the join configuration from the device, once, after
// the node has joined: it holds the cluster's join token, which anyone with
// read access to the Metal project (and the device's metadata endpoint) could
// otherwise read for the server's whole life. Failing here costs nothing but
// that exposure, so it is reported once and not retried.
func (r *run) clearUserdata() error {
	r.inst.Status.UserdataCleared = true
	client, err := r.metalClient()
	if client == nil || err != nil {
		return err
	}
	empty := metal.Sensitive("")
	if _, err := client.UpdateDevice(r.h.ctx, r.inst.Status.InstanceID, metal.DeviceUpdate{Userdata: &empty}); err != nil {
		r.h.deps.Recorder.Eventf(r.inst, corev1.EventTypeWarning, "UserdataNotCleared",
			"could not clear the join configuration from device %s's userdata: %s", r.inst.Status.InstanceID, metalMessage(err))
	}
	return r.trackNode()
}

// metalClient returns the pool's Metal client, or nil after recording why the
// credentials cannot be used (the Secret watch brings the Instance back).
func (r *run) metalClient() (metal.Client, error) {
	creds, err := r.h.deps.Credentials.For(r.inst.Spec.CredentialsSecret)
	if cerr, ok := credentials.AsError(err); ok {
		r.setCondition(v1.InstanceCredentialsReady, metav1.ConditionFalse, cerr.Reason, cerr.Message)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	client, err := r.h.deps.Metal.Client(creds)
	if err != nil {
		return nil, fmt.Errorf("building the Metal client: %w", err)
	}
	return cachedClient{Client: client, cache: r.h.devices}, nil
}

// deviceUsable maps the device state onto the Instance and says whether the
// chain can go on.
func (r *run) deviceUsable(dev *metal.Device) bool {
	switch dev.State {
	case metal.DeviceStateQueued, metal.DeviceStateProvisioning:
		r.setPhase(v1.PhaseProvisioning)
		r.setCondition(v1.InstanceDeviceActive, metav1.ConditionFalse, common.ReasonProvisioning,
			fmt.Sprintf("device %s is %s (%.0f%%)", dev.ID, dev.State, dev.ProvisioningPercentage))
		r.poll()
		return false
	case metal.DeviceStateFailed:
		r.setPhase(v1.PhaseFailed)
		r.setCondition(v1.InstanceDeviceActive, metav1.ConditionFalse, common.ReasonProvisionFailed,
			fmt.Sprintf("Equinix Metal could not provision device %s (plan %s, metro %s); the pool replaces this server",
				dev.ID, r.inst.Spec.Plan, r.inst.Spec.Metro))
		return false
	case metal.DeviceStateActive:
		r.setCondition(v1.InstanceDeviceActive, metav1.ConditionTrue, common.ReasonDeviceActive,
			fmt.Sprintf("device %s is active", dev.ID))
		if r.inst.Status.DeviceActiveAt == nil {
			r.inst.Status.DeviceActiveAt = nowTime(r)
		}
		return true
	case metal.DeviceStateReinstalling:
		r.setCondition(v1.InstanceDeviceActive, metav1.ConditionFalse, "Reinstalling",
			fmt.Sprintf("device %s is reinstalling", dev.ID))
		r.poll()
		return r.inst.Status.InstallRequestedAt != nil
	case metal.DeviceStateDeprovisioning, metal.DeviceStateDeleted:
		r.deviceGone(fmt.Sprintf("device %s is being deleted outside the addon", dev.ID))
		return false
	default: // inactive, powering_on, powering_off
		r.setCondition(v1.InstanceDeviceActive, metav1.ConditionFalse, common.ReasonPoweredOff,
			fmt.Sprintf("device %s is %s; power it on in Equinix Metal, or delete the Instance to replace it", dev.ID, dev.State))
		r.requeue(4 * r.h.deps.Cfg.PollInterval)
		return false
	}
}

// deviceGone records that the device no longer exists; the pool replaces the
// Instance.
func (r *run) deviceGone(message string) {
	r.setPhase(v1.PhaseFailed)
	r.inst.Status.DeviceState = string(metal.DeviceStateDeleted)
	r.setCondition(v1.InstanceDeviceActive, metav1.ConditionFalse, common.ReasonDeviceGone, message)
}
