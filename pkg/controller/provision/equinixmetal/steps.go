package equinixmetal

import (
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/network"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

// run is the provider's part of one pass over one Instance: its steps, in
// the order the Instance chain takes them (see provision.Steps).
type run struct {
	*provision.Pass
	p *Provider
}

var _ provision.Steps = (*run)(nil)

// Provision creates the device (or adopts the one a lost answer left),
// waits for it to be active, brings its ports to the state the installer
// needs and reinstalls it with the installer. One pass goes as far as the
// device allows, and its changes are stored in one status write at the
// end; only intents (a create or a reinstall about to be sent) are written
// before their call.
func (r *run) Provision() (bool, error) {
	client, err := r.metalClient()
	if client == nil || err != nil {
		return false, err
	}
	if r.Obj.Status.InstanceID == "" {
		if done, err := r.ensureDevice(client); err != nil || !done {
			return false, err
		}
	}
	if r.installRunning() && (r.nodeRegisteredReady() || r.p.devices.readWithin(r.Obj.Status.InstanceID, installCheck*r.PollInterval())) {
		// The installer runs for many minutes and nothing on the device
		// tells how it goes: the Node does. The device is looked at now
		// and then for a failure or a deletion until the Node is Ready;
		// from then on the Node tells, however long this pass took to
		// come (a large fleet's queue). A Node that registered but is not
		// Ready does not: its server may have been deleted (found by the
		// fault campaign: such an Instance waited for its Node forever).
		return true, nil
	}
	dev, err := r.refreshDevice(client)
	if dev == nil || err != nil {
		return false, err
	}
	if !r.deviceUsable(dev) {
		return false, nil
	}
	if r.Obj.Spec.BootMode != equinixv1.BootModeSingleBoot {
		if !conditions.IsTrue(r.Obj.Status.Conditions, equinixv1.InstanceNetworkConfigured) ||
			r.Obj.Status.NetworkConfigHash != networkHash(r.Obj, network.PhaseInstall) {
			// The ports must be in the state the installer needs first.
			r.SetPhase(equinixv1.PhaseNetworking)
			if dev, err = r.convergeForInstall(client, dev); dev == nil || err != nil {
				return false, err
			}
		}
		if started, err := r.ensureInstall(client, dev); err != nil || !started {
			return false, err
		}
	}
	return true, nil
}

// Follow: a joined server is followed through its Node only, with no Metal
// call per pass (node heartbeats would turn into API traffic): the
// periodic sweep notices a device that disappears, and a device found gone
// makes the server lost whatever its Node says. Its credentials condition
// follows the project its Secret names, from the cache.
func (r *run) Follow() (bool, error) {
	r.storeDeviceGone()
	if c := conditions.Get(r.Obj.Status.Conditions, equinixv1.InstanceDeviceActive); c != nil && c.Reason == equinixv1.ReasonDeviceGone {
		// The server stays failed until the pool replaces it.
		r.SetPhase(equinixv1.PhaseFailed)
		return false, nil
	}
	return true, r.followProject()
}

// Joined takes the join configuration off the device, in the same pass as
// the join itself.
func (r *run) Joined() error {
	if r.Obj.Status.UserdataCleared {
		return nil
	}
	r.p.reinstalls.forget(r.Obj.UID)
	return r.clearUserdata()
}

// Remediate does nothing: an Equinix Metal server whose node stays not
// Ready is replaced by the pool.
func (r *run) Remediate() error { return nil }

// Tend keeps the device's ports at the pool's network type and VLANs (see
// convergeNetwork), then runs the hardware steps (see tendHardware), each
// whatever came of the other: the same status write stores both. Only the
// device's events are followed while the Instance is being deleted.
func (r *run) Tend() error {
	var network error
	if r.Obj.DeletionTimestamp == nil {
		network = r.convergeNetwork()
	}
	return errors.Join(network, r.tendHardware())
}

// Releasing names the device and the node.
func (r *run) Releasing() string {
	return fmt.Sprintf("removing device %q and node %s", r.Obj.Status.InstanceID, r.Obj.Name)
}

// Stop deletes every device of this Instance and reports whether all are
// confirmed gone. An Instance for which nothing was ever asked of Equinix
// Metal has nothing to release there: no credentials are needed to let it
// go.
func (r *run) Stop() (bool, error) {
	if r.noDeviceRequested() {
		return true, nil
	}
	client, err := r.metalClient()
	if client == nil || err != nil {
		r.Requeue(authRetry)
		return false, err
	}
	gone, err := r.deleteDevices(client)
	if err != nil || !gone {
		if err == nil && r.After() == 0 {
			r.Poll()
		}
		return false, err
	}
	return true, nil
}

// Free deletes the VLANs only this device used: its ports are gone with
// it.
func (r *run) Free() error {
	r.p.goneDevices.drop(r.Obj.UID)
	if r.noDeviceRequested() {
		return nil
	}
	client, err := r.metalClient()
	if client == nil || err != nil {
		r.Requeue(authRetry)
		return err
	}
	if err := r.collectVLANs(client); err != nil {
		return r.metalFailure("deleting VLANs no longer used", equinixv1.InstanceDeleting, err)
	}
	return nil
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

// clearUserdata removes the join configuration from the device after the
// node has joined: it holds the cluster's join token, which anyone with read
// access to the Metal project (and the device's metadata endpoint) could
// otherwise read for the server's whole life. UserdataCleared is set only
// once the API took the update; failures are retried, paced in the status.
func (r *run) clearUserdata() error {
	st := &r.Obj.Status
	if left := waitLeft(st.UserdataClearRetry, r.Now()); left > 0 {
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
	_, err = client.UpdateDevice(r.p.ctx, st.InstanceID, metal.DeviceUpdate{Userdata: &empty})
	switch {
	case err == nil, metal.IsNotFound(err):
		// A device that is gone took its userdata with it; the sweep
		// reports the device itself. A write of this that is lost lets
		// the next pass clear it again, which changes nothing.
		st.UserdataCleared = true
		st.UserdataClearRetry = nil
	default:
		// From twice the poll interval (30s by default), doubling.
		wait := r.backOff(&st.UserdataClearRetry, err, equinixv1.ReasonUserdataNotCleared, 2*r.PollInterval(), maxUserdataClearBackoff)
		r.Eventf(equinixv1.ReasonUserdataNotCleared,
			"could not clear the join configuration from device %s's userdata (%s); retrying in %s",
			st.InstanceID, failure.Message(err), wait.Round(time.Second))
	}
	return nil
}

// deviceUsable maps the device state onto the Instance and says whether the
// pass can go on.
func (r *run) deviceUsable(dev *metal.Device) bool {
	switch dev.State {
	case metal.DeviceStateQueued, metal.DeviceStateProvisioning:
		r.SetPhase(equinixv1.PhaseProvisioning)
		r.SetCondition(equinixv1.InstanceDeviceActive, metav1.ConditionFalse, equinixv1.ReasonProvisioning,
			fmt.Sprintf("device %s is %s (%.0f%%)", dev.ID, dev.State, dev.ProvisioningPercentage))
		r.Poll()
		return false
	case metal.DeviceStateFailed:
		r.SetPhase(equinixv1.PhaseFailed)
		r.SetCondition(equinixv1.InstanceDeviceActive, metav1.ConditionFalse, equinixv1.ReasonProvisionFailed,
			fmt.Sprintf("Equinix Metal could not provision device %s (plan %s, metro %s); the pool replaces this server",
				dev.ID, r.Obj.Spec.Plan, r.Obj.Spec.Metro))
		return false
	case metal.DeviceStateActive:
		r.SetCondition(equinixv1.InstanceDeviceActive, metav1.ConditionTrue, equinixv1.ReasonDeviceActive,
			fmt.Sprintf("device %s is active", dev.ID))
		if r.Obj.Status.DeviceActiveAt == nil {
			r.Obj.Status.DeviceActiveAt = r.NowTime()
		}
		return true
	case metal.DeviceStateReinstalling:
		r.SetCondition(equinixv1.InstanceDeviceActive, metav1.ConditionFalse, equinixv1.ReasonReinstalling,
			fmt.Sprintf("device %s is reinstalling", dev.ID))
		r.Poll()
		return r.Obj.Status.InstallRequestedAt != nil
	case metal.DeviceStateDeprovisioning, metal.DeviceStateDeleted:
		r.deviceGone(fmt.Sprintf("device %s is being deleted outside the addon", dev.ID))
		return false
	default: // inactive, powering_on, powering_off
		if r.Obj.OffOnRequest() || r.Obj.Status.LastPowerAction.InFlight() {
			r.SetCondition(equinixv1.InstanceDeviceActive, metav1.ConditionFalse, equinixv1.ReasonPoweredOffOnRequest,
				fmt.Sprintf("device %s is %s on request (spec.powerState %s)", dev.ID, dev.State, r.Obj.Spec.WantedPowerState()))
			r.Requeue(4 * r.PollInterval())
			return false
		}
		r.SetCondition(equinixv1.InstanceDeviceActive, metav1.ConditionFalse, equinixv1.ReasonPoweredOff,
			fmt.Sprintf("device %s is %s; power it on in Equinix Metal, or delete the Instance to replace it", dev.ID, dev.State))
		r.Requeue(4 * r.PollInterval())
		return false
	}
}

// deviceGone records that the device no longer exists; the pool replaces the
// Instance.
func (r *run) deviceGone(message string) {
	r.SetPhase(equinixv1.PhaseFailed)
	r.Obj.Status.DeviceState = string(metal.DeviceStateDeleted)
	r.SetCondition(equinixv1.InstanceDeviceActive, metav1.ConditionFalse, equinixv1.ReasonDeviceGone, message)
}

// nodeRegisteredReady reports whether the server's Node is there (its
// installer is done) and Ready: only then does it tell for the device. A
// Node that registered and then went silent may have lost its server, which
// only the device can say.
func (r *run) nodeRegisteredReady() bool {
	node, err := r.p.nodes.Get(r.Obj.NodeName())
	return err == nil && common.OwnedNode(node, r.Obj) && harvester.IsNodeReady(node)
}
