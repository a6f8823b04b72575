package equinixmetal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/network"
)

// convergeNetwork brings the device's ports to the pool's network type and
// VLANs, as a step of the provisioning pass. Before the install it
// converges to the state the installer needs (network.PhaseInstall); after
// the join, to the pool's type. While the installer runs it leaves the
// ports alone. A converged device whose configuration did not change costs
// no API call.
func (r *run) convergeNetwork() error {
	inst := r.Obj
	if inst.Status.InstanceID == "" {
		return nil
	}
	phase, ok := networkPhase(inst)
	if !ok {
		return nil
	}
	hash := networkHash(inst, phase)
	if inst.Status.NetworkConfigHash == hash && conditions.IsTrue(inst.Status.Conditions, equinixv1.InstanceNetworkConfigured) {
		return nil
	}
	if refusedRecently(inst, r.Now()) {
		// Its retry is scheduled; node heartbeats and status writes, which
		// bring the Instance back too, must not send the refused call again.
		return nil
	}
	return r.converge(phase, hash)
}

// refusedRecently reports whether Equinix Metal refused a call for this
// generation of the Instance less than invalidRetry ago. An edit of the spec
// (a new generation) retries at once.
func refusedRecently(inst *equinixv1.Instance, now time.Time) bool {
	c := conditions.Get(inst.Status.Conditions, equinixv1.InstanceNetworkConfigured)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == equinixv1.ReasonInvalidRequest &&
		c.ObservedGeneration == inst.Generation && now.Sub(c.LastTransitionTime.Time) < invalidRetry
}

// networkPhase says which state Tend brings the ports to now, if any.
// Before a reinstall Provision converges them itself, on its way to the
// install; a single-boot server boots its installer at creation, and Tend
// converges its ports while it installs.
func networkPhase(inst *equinixv1.Instance) (network.Phase, bool) {
	st := inst.Status
	if st.JoinedAt != nil {
		return network.PhaseJoined, true
	}
	if inst.Spec.BootMode != equinixv1.BootModeSingleBoot || !conditions.IsTrue(st.Conditions, equinixv1.InstanceDeviceActive) {
		// Before a reinstall the provisioning pass does it; while the
		// installer runs, the ports stay as they are: changing them under it
		// could cut it off from the metadata service or the cluster.
		return 0, false
	}
	return network.PhaseInstall, true
}

// networkHash names the port state the ports converged to. The phase counts
// only for the layer-2 types: the others want the same ports before and after
// the join, so the join costs them no re-check.
func networkHash(inst *equinixv1.Instance, phase network.Phase) string {
	if !network.IsLayer2(inst.Spec.NetworkingConfiguration.Type) {
		phase = network.PhaseJoined
	}
	raw, _ := json.Marshal(struct {
		Phase      network.Phase
		Networking equinixv1.NetworkingConfiguration
		Management []string
	}{phase, inst.Spec.NetworkingConfiguration, inst.Spec.ManagementInterface})
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}

// collectVLANs deletes the addon's VLANs of the Instance's metro that no
// server uses or wants any more, after a VLAN left this device.
func (r *run) collectVLANs(client metal.Client) error {
	deleted, _, err := r.p.vlanUsers().CollectGarbage(r.p.ctx, client, r.Obj.Spec.Metro)
	if len(deleted) > 0 {
		r.p.vlanIDs.Forget(client.ProjectID(), r.Obj.Spec.Metro)
	}
	for _, vx := range deleted {
		r.Eventf(equinixv1.ReasonVLANDeleted, "deleted VLAN %d: no server uses it any more", vx)
	}
	return err
}

// networkFailure names the step and the port in the condition; the error
// class decides the retry as for every Metal call.
func (r *run) networkFailure(step string, err error) error {
	switch failure.ClassOf(err) {
	case failure.Throttled, failure.Transient:
		// Retried quietly.
	case failure.Invalid:
		// metalFailure names the step on NetworkConfigured. Passing through
		// Unknown first makes lastTransitionTime the time of this refusal,
		// which refusedRecently counts the retry from.
		conditions.Set(&r.Obj.Status.Conditions, r.Obj.Generation, equinixv1.InstanceNetworkConfigured, metav1.ConditionUnknown, equinixv1.ReasonRetrying, "")
	case failure.NoCapacity:
		// metalFailure names the step on NetworkConfigured itself.
	default:
		r.SetCondition(equinixv1.InstanceNetworkConfigured, metav1.ConditionFalse, equinixv1.ReasonStepFailed,
			fmt.Sprintf("%s: %s", step, failure.Message(err)))
	}
	return r.metalFailure(step, equinixv1.InstanceNetworkConfigured, err)
}

// readDevice reads the device for the ports; a gone device is left to
// Provision to report.
func (r *run) readDevice(client metal.Client) (*metal.Device, error) {
	dev, err := client.GetDevice(r.p.ctx, r.Obj.Status.InstanceID)
	if metal.IsNotFound(err) || failure.ClassOf(err) == failure.Forbidden {
		return nil, nil
	}
	if err != nil {
		return nil, r.metalFailure("reading the device's ports", equinixv1.InstanceNetworkConfigured, err)
	}
	return dev, nil
}
