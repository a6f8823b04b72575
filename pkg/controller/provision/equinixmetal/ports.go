package equinixmetal

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/vlans"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/network"
)

// maxStepsPerPass bounds the port calls of one reconcile, so one server cannot
// hold a worker for long; the next pass continues.
const maxStepsPerPass = 12

func (r *run) converge(phase network.Phase, hash string) error {
	client, err := r.metalClient()
	if client == nil || err != nil {
		return err
	}
	dev, err := r.readDevice(client)
	if dev == nil || err != nil {
		return err
	}
	_, err = r.convergePorts(client, dev, phase, hash)
	return err
}

// convergeForInstall brings the ports to the state the installer needs, in
// the provisioning pass that saw the device active, so that the pass goes on
// to the install without a status write of its own. It returns the device as
// the port calls left it, or nil while the ports are not there yet (the
// NetworkConfigured condition says why).
func (r *run) convergeForInstall(client metal.Client, dev *metal.Device) (*metal.Device, error) {
	if refusedRecently(r.Obj, r.Now()) {
		// Its retry is scheduled; a status write or a node event must not
		// send the refused call again.
		return nil, nil
	}
	return r.convergePorts(client, dev, network.PhaseInstall, networkHash(r.Obj, network.PhaseInstall))
}

// convergePorts runs the port steps from dev's ports to the phase's and
// returns the device once they match, nil when a later pass must go on.
func (r *run) convergePorts(client metal.Client, dev *metal.Device, phase network.Phase, hash string) (*metal.Device, error) {
	metro := strings.ToLower(r.Obj.Spec.Metro)
	wanted := network.VXLANs(&r.Obj.Spec.InstanceTemplate)
	vlanIDs, created, err := vlans.Ensure(r.p.ctx, client, r.p.vlanIDs, r.p.clusterID, metro, wanted, dev.UnresolvedVLANs())
	if err != nil {
		return nil, r.networkFailure("finding or creating the VLANs", err)
	}
	for _, vx := range created {
		r.Eventf(equinixv1.ReasonVLANCreated, "created VLAN %d in metro %s", vx, metro)
	}
	// dropped is set when a VLAN left the device for good (not just moved to
	// another of its ports): only then may an addon VLAN have become unused.
	dropped := false
	for i := 0; ; i++ {
		want, err := network.Want(dev.Ports, &r.Obj.Spec.InstanceTemplate, phase)
		if err != nil {
			r.SetCondition(equinixv1.InstanceNetworkConfigured, metav1.ConditionFalse, equinixv1.ReasonPortMissing, err.Error())
			return nil, nil
		}
		steps := network.Steps(dev.Ports, want, vlanIDs)
		if len(steps) == 0 {
			// The ports are as the calls left them: the next pass (the join,
			// soon after on a fast install) needs no read to know them.
			r.p.devices.put(dev)
			return dev, r.networkConverged(client, dev, phase, hash, dropped)
		}
		if i == maxStepsPerPass || r.awaiting(steps[0]) {
			r.Requeue(r.PollInterval())
			return nil, nil
		}
		ran, answer, failed, err := r.runSteps(client, steps)
		if failed || err != nil {
			// A failure the error class retries later (429, busy, refused) also
			// ends the pass: going on would send the same call again at once.
			return nil, err
		}
		for _, s := range ran {
			dropped = dropped || (s.Op == network.OpUnassign && !slices.Contains(wanted, s.VXLAN))
		}
		last := ran[len(ran)-1]
		// VLAN steps take effect before the API answers them.
		dev = dev.DeepCopy()
		dev.Ports = network.AfterVLANSteps(dev.Ports, ran)
		if !last.Structural() {
			continue
		}
		if ports, ok := network.AfterAnswer(dev.Ports, last, answer); ok {
			// The answer shows the whole change: no read-back.
			dev.Ports = ports
			continue
		}
		prev := dev
		if dev, err = r.readDevice(client); dev == nil || err != nil {
			return nil, err
		}
		if !network.Landed(prev.Ports, dev.Ports, last) {
			// The API answers before a conversion has finished: look again soon.
			r.SetCondition(equinixv1.InstanceNetworkConfigured, metav1.ConditionFalse, equinixv1.ReasonConverging, waitingFor(last))
			r.Requeue(r.PollInterval())
			return nil, nil
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
	c := conditions.Get(r.Obj.Status.Conditions, equinixv1.InstanceNetworkConfigured)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == equinixv1.ReasonConverging &&
		c.Message == waitingFor(s) && r.Now().Sub(c.LastTransitionTime.Time) < conversionWait
}

// runSteps runs VLAN steps back to back and stops after the first structural
// step (bond, disbond, conversion), whose effect must be seen before the
// next. It returns the steps it ran and the API's answer to the last one.
// failed reports that a step failed; err is what the failure's class makes of
// it (nil when the retry is already scheduled).
func (r *run) runSteps(client metal.Client, steps []network.Step) (ran []network.Step, answer *metal.Port, failed bool, err error) {
	for _, s := range steps {
		answer, err := s.Send(r.p.ctx, client)
		if err != nil {
			if s.Op == network.OpAssign {
				// The cached VLAN ID may name a VLAN deleted since: list afresh next time.
				r.p.vlanIDs.Forget(client.ProjectID(), r.Obj.Spec.Metro)
			}
			return ran, nil, true, r.networkFailure(s.String(), err)
		}
		ran = append(ran, s)
		if s.Structural() {
			return ran, answer, false, nil
		}
	}
	return ran, nil, false, nil
}

func (r *run) networkConverged(client metal.Client, dev *metal.Device, phase network.Phase, hash string, dropped bool) error {
	st := &r.Obj.Status
	st.NetworkConfigHash = hash
	st.NetworkType = string(dev.NetworkType())
	st.PublicIP, st.PrivateIP = dev.PublicIPv4(), dev.PrivateIPv4()
	what := network.EffectiveType(&r.Obj.Spec.InstanceTemplate, phase)
	msg := fmt.Sprintf("ports of device %s match %s", dev.ID, what)
	if phase == network.PhaseInstall && what != r.Obj.Spec.NetworkingConfiguration.Type && r.Obj.Spec.NetworkingConfiguration.Type != "" {
		msg += fmt.Sprintf(" for the install; %s follows once the node has joined", r.Obj.Spec.NetworkingConfiguration.Type)
	}
	r.SetCondition(equinixv1.InstanceNetworkConfigured, metav1.ConditionTrue, equinixv1.ReasonConverged, msg)
	if dropped {
		if err := r.collectVLANs(client); err != nil {
			return r.networkFailure("deleting VLANs no longer used", err)
		}
	}
	return nil
}
