package instance

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/vlans"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/network"
)

// maxStepsPerPass bounds the port calls of one reconcile, so one server cannot
// hold a worker for long; the next pass continues.
const maxStepsPerPass = 12

// ConvergeNetwork is the networking chain: it brings the device's ports to the
// pool's network type and VLANs. Before the install it converges to the state
// the installer needs (network.PhaseInstall); after the join, to the pool's
// type. While the installer runs it leaves the ports alone. A converged
// device whose configuration did not change costs no API call.
func (h *Handler) ConvergeNetwork(_ string, inst *v1.Instance) (*v1.Instance, error) {
	if inst == nil || inst.DeletionTimestamp != nil || !HasFinalizer(inst) || inst.Status.InstanceID == "" {
		return inst, nil
	}
	phase, ok := networkPhase(inst)
	if !ok {
		return inst, nil
	}
	hash := networkHash(inst, phase)
	if inst.Status.NetworkConfigHash == hash && conditions.IsTrue(inst.Status.Conditions, v1.InstanceNetworkConfigured) {
		return inst, nil
	}
	if refusedRecently(inst, time.Now()) {
		// Its retry is scheduled; node heartbeats and status writes, which
		// bring the Instance back too, must not send the refused call again.
		return inst, nil
	}
	if stale, err := h.stale(inst); stale || err != nil {
		return inst, err
	}
	r := h.newRun(inst)
	return r.finish(r.converge(phase, hash))
}

// stale reports whether a newer version of the Instance exists than the one
// the informer cache handed over. Port calls are not idempotent, and the
// status a pass writes (a conversion under way, a refusal) is what stops the
// next pass from sending them again; a pass on an older version would miss
// it. The watch brings the newer version.
func (h *Handler) stale(inst *v1.Instance) (bool, error) {
	live, err := h.instances.Get(inst.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading instance %s: %w", inst.Name, err)
	}
	return live.ResourceVersion != inst.ResourceVersion, nil
}

// refusedRecently reports whether Equinix Metal refused a call for this
// generation of the Instance less than invalidRetry ago. An edit of the spec
// (a new generation) retries at once.
func refusedRecently(inst *v1.Instance, now time.Time) bool {
	c := conditions.Get(inst.Status.Conditions, v1.InstanceNetworkConfigured)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1.ReasonInvalidRequest &&
		c.ObservedGeneration == inst.Generation && now.Sub(c.LastTransitionTime.Time) < invalidRetry
}

// networkPhase says which state the ports should be in now, if any.
func networkPhase(inst *v1.Instance) (network.Phase, bool) {
	st := inst.Status
	if st.JoinedAt != nil {
		return network.PhaseJoined, true
	}
	if !conditions.IsTrue(st.Conditions, v1.InstanceDeviceActive) {
		return 0, false
	}
	installing := conditions.IsTrue(st.Conditions, v1.InstanceInstalling)
	if installing && inst.Spec.BootMode != v1.BootModeSingleBoot {
		// The installer is running on the ports as they are; changing them
		// under it could cut it off from the metadata service or the cluster.
		return 0, false
	}
	return network.PhaseInstall, true
}

// networkHash names the port state the chain converged to. The phase counts
// only for the layer-2 types: the others want the same ports before and after
// the join, so the join costs them no re-check.
func networkHash(inst *v1.Instance, phase network.Phase) string {
	if !network.IsLayer2(inst.Spec.NetworkingConfiguration.Type) {
		phase = network.PhaseJoined
	}
	raw, _ := json.Marshal(struct {
		Phase      network.Phase
		Networking v1.NetworkingConfiguration
		Management []string
	}{phase, inst.Spec.NetworkingConfiguration, inst.Spec.ManagementInterface})
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}

func (r *run) converge(phase network.Phase, hash string) error {
	client, err := r.metalClient()
	if client == nil || err != nil {
		return err
	}
	dev, err := r.h.readDevice(r, client)
	if dev == nil || err != nil {
		return err
	}
	metro := strings.ToLower(r.inst.Spec.Metro)
	wanted := network.VXLANs(&r.inst.Spec.InstanceTemplate)
	vlanIDs, created, err := vlans.Ensure(r.h.ctx, client, r.h.vlanIDs, r.h.clusterID, metro, wanted, dev.UnresolvedVLANs())
	if err != nil {
		return r.networkFailure("finding or creating the VLANs", err)
	}
	for _, vx := range created {
		r.Eventf(r.inst, v1.ReasonVLANCreated, "created VLAN %d in metro %s", vx, metro)
	}
	// dropped is set when a VLAN left the device for good (not just moved to
	// another of its ports): only then may an addon VLAN have become unused.
	dropped := false
	for i := 0; ; i++ {
		want, err := network.Want(dev.Ports, &r.inst.Spec.InstanceTemplate, phase)
		if err != nil {
			r.setCondition(v1.InstanceNetworkConfigured, metav1.ConditionFalse, v1.ReasonPortMissing, err.Error())
			return nil
		}
		steps := network.Steps(dev.Ports, want, vlanIDs)
		if len(steps) == 0 {
			return r.networkConverged(client, dev, phase, hash, dropped)
		}
		if i == maxStepsPerPass || r.awaiting(steps[0]) {
			r.Requeue(r.h.settings.PollInterval)
			return nil
		}
		structural, failed, err := r.runSteps(client, steps)
		if failed || err != nil {
			// A failure the error class retries later (429, busy, refused) also
			// ends the pass: going on would send the same call again at once.
			return err
		}
		for _, s := range steps {
			dropped = dropped || (s.Op == network.OpUnassign && !slices.Contains(wanted, s.VXLAN))
		}
		if structural == nil {
			// Only VLAN steps, all answered: they have taken effect.
			dev = dev.DeepCopy()
			dev.Ports = network.AfterVLANSteps(dev.Ports, steps)
			continue
		}
		prev := dev
		if dev, err = r.h.readDevice(r, client); dev == nil || err != nil {
			return err
		}
		if !network.Landed(prev.Ports, dev.Ports, *structural) {
			// The API answers before a conversion has finished: look again soon.
			r.setCondition(v1.InstanceNetworkConfigured, metav1.ConditionFalse, v1.ReasonConverging, waitingFor(*structural))
			r.Requeue(r.h.settings.PollInterval)
			return nil
		}
	}
}

// conversionWait is how long a structural step the API accepted may take to
// show on the port before it is sent again, counted from when the ports
// stopped matching.
const conversionWait = 2 * time.Minute

func waitingFor(s network.Step) string {
	return fmt.Sprintf("waiting for %s to take effect", s)
}

// awaiting reports whether s is the structural step an earlier pass sent and
// is still waiting to see: the API answers a conversion before it lands and
// refuses a second one while it is in progress, so the port is only read
// again.
func (r *run) awaiting(s network.Step) bool {
	c := conditions.Get(r.inst.Status.Conditions, v1.InstanceNetworkConfigured)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1.ReasonConverging &&
		c.Message == waitingFor(s) && r.now().Sub(c.LastTransitionTime.Time) < conversionWait
}

// runSteps runs VLAN steps back to back and stops after the first structural
// step (bond, disbond, conversion), which must be read back before the next.
// failed reports that a step failed; err is what the failure's class makes of
// it (nil when the retry is already scheduled).
func (r *run) runSteps(client metal.Client, steps []network.Step) (structural *network.Step, failed bool, err error) {
	for i := range steps {
		s := steps[i]
		if err := r.runStep(client, s); err != nil {
			if s.Op == network.OpAssign {
				// The cached VLAN ID may name a VLAN deleted since: list afresh next time.
				r.h.vlanIDs.Forget(client.ProjectID(), r.inst.Spec.Metro)
			}
			return nil, true, r.networkFailure(s.String(), err)
		}
		if s.Op != network.OpAssign && s.Op != network.OpUnassign {
			return &s, false, nil
		}
	}
	return nil, false, nil
}

func (r *run) runStep(client metal.Client, s network.Step) error {
	ctx := r.h.ctx
	switch s.Op {
	case network.OpAssign:
		return client.AssignVLAN(ctx, s.PortID, s.VLANID)
	case network.OpUnassign:
		return client.UnassignVLAN(ctx, s.PortID, s.VLANID)
	case network.OpBond:
		return client.BondPort(ctx, s.PortID, s.Bulk)
	case network.OpDisbond:
		return client.DisbondPort(ctx, s.PortID, s.Bulk)
	case network.OpToLayer2:
		return client.ConvertLayer2(ctx, s.PortID)
	case network.OpToLayer3:
		return client.ConvertLayer3(ctx, s.PortID)
	}
	return fmt.Errorf("unknown port operation %q", s.Op)
}

func (r *run) networkConverged(client metal.Client, dev *metal.Device, phase network.Phase, hash string, dropped bool) error {
	st := &r.inst.Status
	st.NetworkConfigHash = hash
	st.NetworkType = string(dev.NetworkType())
	st.PublicIP, st.PrivateIP = dev.PublicIPv4(), dev.PrivateIPv4()
	what := network.EffectiveType(&r.inst.Spec.InstanceTemplate, phase)
	msg := fmt.Sprintf("ports of device %s match %s", dev.ID, what)
	if phase == network.PhaseInstall && what != r.inst.Spec.NetworkingConfiguration.Type && r.inst.Spec.NetworkingConfiguration.Type != "" {
		msg += fmt.Sprintf(" for the install; %s follows once the node has joined", r.inst.Spec.NetworkingConfiguration.Type)
	}
	r.setCondition(v1.InstanceNetworkConfigured, metav1.ConditionTrue, v1.ReasonConverged, msg)
	if dropped {
		if err := r.collectVLANs(client); err != nil {
			return r.networkFailure("deleting VLANs no longer used", err)
		}
	}
	return nil
}

// collectVLANs deletes the addon's VLANs of the Instance's metro that no
// server uses or wants any more, after a VLAN left this device.
func (r *run) collectVLANs(client metal.Client) error {
	deleted, _, err := r.h.vlanUsers().CollectGarbage(r.h.ctx, client, r.inst.Spec.Metro)
	if len(deleted) > 0 {
		r.h.vlanIDs.Forget(client.ProjectID(), r.inst.Spec.Metro)
	}
	for _, vx := range deleted {
		r.Eventf(r.inst, v1.ReasonVLANDeleted, "deleted VLAN %d: no server uses it any more", vx)
	}
	return err
}

// networkFailure names the step and the port in the condition; the error
// class decides the retry as for every Metal call.
func (r *run) networkFailure(step string, err error) error {
	switch metal.ClassOf(err) {
	case metal.ClassThrottled, metal.ClassTransient:
		// Retried quietly.
	case metal.ClassInvalid:
		// metalFailure names the step on NetworkConfigured. Passing through
		// Unknown first makes lastTransitionTime the time of this refusal,
		// which refusedRecently counts the retry from.
		conditions.Set(&r.inst.Status.Conditions, r.inst.Generation, v1.InstanceNetworkConfigured, metav1.ConditionUnknown, v1.ReasonRetrying, "")
	case metal.ClassNoCapacity:
		// metalFailure names the step on NetworkConfigured itself.
	default:
		r.setCondition(v1.InstanceNetworkConfigured, metav1.ConditionFalse, v1.ReasonStepFailed,
			fmt.Sprintf("%s: %s", step, metalMessage(err)))
	}
	return r.metalFailure(step, v1.InstanceNetworkConfigured, err)
}

// readDevice reads the device for the networking chain; a gone device is left
// to the provisioning chain to report.
func (h *Handler) readDevice(r *run, client metal.Client) (*metal.Device, error) {
	dev, err := client.GetDevice(h.ctx, r.inst.Status.InstanceID)
	if metal.IsNotFound(err) || metal.ClassOf(err) == metal.ClassForbidden {
		return nil, nil
	}
	if err != nil {
		return nil, r.metalFailure("reading the device's ports", v1.InstanceNetworkConfigured, err)
	}
	return dev, nil
}
