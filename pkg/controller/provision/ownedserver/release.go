package ownedserver

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
)

// powerOffResend is how long a power-off whose effect is not seen waits
// before it is sent again (an IPMI command lost on the way).
const powerOffResend = 2 * time.Minute

// powerOffOwned switches the server off through its BMC and reports
// whether it is off.
func (r *run) powerOffOwned(inv *seederv1alpha1.Inventory) (bool, error) {
	m, ok, err := r.bmcMachine(inv, equinixv1.InstanceDeleting)
	if err != nil || !ok {
		return false, err
	}
	defer m.Release(r.After())
	power, err := m.PowerState(r.p.ctx)
	if err != nil {
		r.SetCondition(equinixv1.InstanceDeleting, metav1.ConditionTrue, equinixv1.ReasonBMCFailed,
			fmt.Sprintf("reading the power of server %s before releasing it: %v", inv.Name, err))
		return false, fmt.Errorf("server %s, reading the power state: %w", inv.Name, err)
	}
	if power == machine.PowerOff {
		// Off, the server cannot be reading the image: the image the
		// addon inserted leaves the virtual CD before the claim ends, or
		// the release waits (see mediaEjected).
		return r.mediaEjected(inv, m, equinixv1.InstanceDeleting)
	}
	if why := fencerSwitchingOff(inv); why != "" {
		r.SetCondition(equinixv1.InstanceDeleting, metav1.ConditionTrue, equinixv1.ReasonPoweringOff, why)
		r.Poll()
		return false, nil
	}
	// The intent is the Deleting condition's reason (timestamps of one
	// second could not tell a power-off from the power-on of the same
	// second).
	last := r.Obj.Status.PowerRequestedAt
	c := conditions.Get(r.Obj.Status.Conditions, equinixv1.InstanceDeleting)
	sent := c != nil && c.Reason == equinixv1.ReasonPoweringOff && last != nil
	if sent && r.Now().Before(last.Add(powerOffResend)) {
		r.Poll()
		return false, nil
	}
	r.Obj.Status.PowerRequestedAt = r.NowTime()
	r.SetCondition(equinixv1.InstanceDeleting, metav1.ConditionTrue, equinixv1.ReasonPoweringOff,
		fmt.Sprintf("powering server %s off; it is released once it is off", inv.Name))
	if err := r.Persist(); err != nil {
		return false, err
	}
	if err := m.Power(r.p.ctx, machine.ActionOff); err != nil && !machine.MaybeApplied(err) {
		r.SetCondition(equinixv1.InstanceDeleting, metav1.ConditionTrue, equinixv1.ReasonBMCFailed,
			fmt.Sprintf("powering server %s off before releasing it: %v", inv.Name, err))
		return false, fmt.Errorf("server %s, powering off: %w", inv.Name, err)
	}
	r.Poll()
	return false, nil
}
