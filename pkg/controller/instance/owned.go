package instance

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/bootfirmware"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/bmcendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/bmcdriver"
)

// The provisioning and cleanup of a server people own. Where a Metal
// Instance creates a device, this one claims an Inventory; where Metal
// reinstalls, this one sets a one-time network boot and powers the server
// on through its BMC; the rest (the Node, maintenance mode) is the chain's
// own. Every BMC command goes through the hardware mode's one driver, so the
// server's BMC keeps one session whichever chain asks, and every command is
// stored as an intent before it is sent, and never sent twice.

// provisionOwned runs an owned Instance from its claim to a Ready node.
func (r *run) provisionOwned() error {
	if r.Obj.Status.JoinedAt != nil {
		// A joined server is followed through its Node, and power-cycled
		// when it stays unhealthy.
		if err := r.trackNode(); err != nil {
			return err
		}
		return r.remediateOwned()
	}
	inv, err := r.claimedServer()
	if err != nil {
		return err
	}
	if inv == nil && r.Obj.Status.Server != "" {
		r.setPhase(equinixv1.PhaseFailed)
		r.SetCondition(equinixv1.InstanceServerClaimed, metav1.ConditionFalse, equinixv1.ReasonServerGone, fmt.Sprintf(
			"Inventory %s/%s is gone or no longer carries this Instance's claim; the pool replaces this server",
			seederv1alpha1.InventoryNamespace, r.Obj.Status.Server))
		return nil
	}
	if inv == nil {
		var unnamable int
		if inv, unnamable, err = r.claim(); err != nil {
			return err
		}
		if inv == nil {
			r.setPhase(equinixv1.PhasePending)
			r.SetCondition(equinixv1.InstanceServerClaimed, metav1.ConditionFalse, equinixv1.ReasonNoFreeServer, noFreeServer(unnamable))
			// The Inventories' watch brings the Instance back when one frees up.
			r.Requeue(4 * r.h.settings.PollInterval)
			return nil
		}
	}
	if r.Obj.Status.Server != inv.Name {
		// Stored at once: the claim is the create of this provider.
		if err := r.PersistOutcome(func(st *equinixv1.InstanceStatus) {
			st.Server = inv.Name
			st.DeviceCreatedAt = nowTime(r)
		}); err != nil {
			return err
		}
		r.Eventf(equinixv1.ReasonServerClaimed, "claimed server %s (Inventory %s/%s, management MAC %s)",
			inv.Name, inv.Namespace, inv.Name, inv.Spec.ManagementInterfaceMacAddress)
	}
	r.SetCondition(equinixv1.InstanceServerClaimed, metav1.ConditionTrue, equinixv1.ReasonServerClaimed, fmt.Sprintf(
		"claimed server %s (Inventory %s/%s, management MAC %s)", inv.Name, inv.Namespace, inv.Name, inv.Spec.ManagementInterfaceMacAddress))
	if r.Obj.Status.PowerRequestedAt == nil {
		if started, err := r.bootOwned(inv); err != nil || !started {
			return err
		}
	}
	r.setPhase(equinixv1.PhaseInstalling)
	return r.trackNode()
}

// noFreeServer says why no server was claimed; unnamable counts those
// free but for a name that cannot be a host name.
func noFreeServer(unnamable int) string {
	msg := fmt.Sprintf("no free server: no Inventory in %s that spec.servers.selector chooses is unclaimed, without a node, "+
		"with a managementInterfaceMacAddress and %s", seederv1alpha1.InventoryNamespace, seederv1alpha1.InventoryNodeReady)
	if unnamable > 0 {
		msg += fmt.Sprintf(", and named so that it can be a host name (a DNS-1123 label: lower case letters, digits and '-', "+
			"at most 63 characters, no dot), the name its node joins under; %d otherwise free server(s) are skipped for their name",
			unnamable)
	}
	return msg + "; waiting for one"
}

// bmcMachine is the server's BMC for this pass, from the shared driver,
// under the name the Inventories' chain uses too. ok is false when its
// Secret does not let it be reached; the condition says why.
func (r *run) bmcMachine(inv *seederv1alpha1.Inventory, condType string) (*bmcdriver.Machine, bool, error) {
	ep, problem, err := bmcendpoint.For(r.h.ctx, r.h.k8s.CoreV1(), inv, r.h.settings.BMCTimeout)
	if err != nil {
		return nil, false, err
	}
	if problem != nil {
		r.SetCondition(condType, metav1.ConditionFalse, problem.Reason, fmt.Sprintf("server %s: %s", inv.Name, problem.Message))
		r.Requeue(4 * r.h.settings.PollInterval)
		return nil, false, nil
	}
	m := r.h.bmcs.Machine(ep, bmcdriver.MachineOptions{Owner: bmcendpoint.Owner(inv), Key: string(inv.UID),
		Interval: time.Hour, Now: r.now})
	return m, true, nil
}

// bootOwned sets the one-time network boot and powers the server on (or
// cycles it, when it is on), each command once: its intent is stored
// first, and a command whose answer was lost counts as sent. It reports
// whether both were sent.
func (r *run) bootOwned(inv *seederv1alpha1.Inventory) (bool, error) {
	m, ok, err := r.bmcMachine(inv, equinixv1.InstanceInstalling)
	if err != nil || !ok {
		return false, err
	}
	defer m.Release(r.After())
	r.setPhase(equinixv1.PhaseProvisioning)
	// r.Obj is the stored object after each Persist: its status is read
	// afresh, never through a pointer taken before.
	if r.Obj.Status.NetworkBootRequestedAt == nil {
		fw, problem := bootfirmware.For(inv, r.Obj.Spec.Servers.BootFirmware)
		if problem != nil {
			r.SetCondition(equinixv1.InstanceInstalling, metav1.ConditionFalse, problem.Reason, problem.Message)
			r.Requeue(4 * r.h.settings.PollInterval)
			return false, nil
		}
		// The console password and the UUID the boot endpoint checks are
		// stored with the boot's intent, before the server can ask.
		if _, ok, err := r.passwordHash(); err != nil || !ok {
			return false, err
		}
		if facts, err := m.Facts(r.h.ctx); err == nil {
			r.Obj.Status.SystemUUID = facts.SystemUUID
		}
		r.Obj.Status.NetworkBootRequestedAt = nowTime(r)
		if err := r.Persist(); err != nil {
			return false, err
		}
		used, err := m.NetworkBootOnce(r.h.ctx, fw.Want)
		if err != nil && !machine.MaybeApplied(err) {
			return false, r.bmcRefused(inv, "the one-time network boot "+fw.Describe(used), err, func(st *equinixv1.InstanceStatus) { st.NetworkBootRequestedAt = nil })
		}
		r.Obj.Status.BootFirmware = bootfirmware.Name(used)
		r.Eventf(equinixv1.ReasonNetworkBoot, "asked the BMC of server %s to boot it from the network once, %s", inv.Name, fw.Describe(used))
	}
	power, err := m.PowerState(r.h.ctx)
	if err != nil {
		return false, r.bmcRefused(inv, "reading the power state", err, nil)
	}
	action, how := machine.ActionOn, "powered on"
	if power == machine.PowerOn {
		// Only a restart boots the override.
		action, how = machine.ActionReboot, "restarted"
	}
	r.Obj.Status.PowerRequestedAt = nowTime(r)
	if err := r.Persist(); err != nil {
		return false, err
	}
	if err := m.Power(r.h.ctx, action); err != nil && !machine.MaybeApplied(err) {
		return false, r.bmcRefused(inv, "powering the server on", err, func(st *equinixv1.InstanceStatus) { st.PowerRequestedAt = nil })
	}
	r.Obj.Status.InstallRequestedAt = nowTime(r)
	r.SetCondition(equinixv1.InstanceInstalling, metav1.ConditionTrue, equinixv1.ReasonNetworkBoot, fmt.Sprintf(
		"server %s was %s to boot from the network into the Harvester installer; waiting for node %s", inv.Name, how, r.Obj.NodeName()))
	return true, nil
}

// bmcRefused reports a BMC command that was not carried out. undo takes
// back its intent (nothing was sent, so it may be asked again), stored at
// once; the work queue's backoff brings the Instance back.
func (r *run) bmcRefused(inv *seederv1alpha1.Inventory, what string, err error, undo func(*equinixv1.InstanceStatus)) error {
	if undo != nil {
		if perr := r.PersistOutcome(undo); perr != nil {
			return perr
		}
	}
	r.SetCondition(equinixv1.InstanceInstalling, metav1.ConditionFalse, equinixv1.ReasonBMCFailed,
		fmt.Sprintf("the BMC of server %s: %s failed: %v", inv.Name, what, err))
	return fmt.Errorf("server %s, %s: %w", inv.Name, what, err)
}

// cleanupOwned gives the server back: maintenance mode for a joined node,
// the server powered off (before its Node goes, which a running kubelet
// would register again), the Node deleted, the claim removed. A server this
// Instance never booted keeps its power as it was.
func (r *run) cleanupOwned() (bool, error) {
	if r.Obj.Status.Status != equinixv1.PhaseDeleting {
		r.setPhase(equinixv1.PhaseDeleting)
		msg := "no server was claimed: nothing to release"
		if r.Obj.Status.Server != "" {
			msg = fmt.Sprintf("releasing server %s and removing its node %s", r.Obj.Status.Server, r.Obj.NodeName())
		}
		r.SetCondition(equinixv1.InstanceDeleting, metav1.ConditionTrue, equinixv1.ReasonDeleting, msg)
	}
	inv, err := r.claimedServer()
	if err != nil {
		return false, err
	}
	if done, err := r.maintenance(); err != nil || !done {
		return false, err
	}
	if inv != nil && r.Obj.Status.NetworkBootRequestedAt != nil {
		if off, err := r.powerOffOwned(inv); err != nil || !off {
			return false, err
		}
	}
	if err := r.deleteNode(); err != nil {
		return false, err
	}
	if err := r.deletePasswordSecret(); err != nil {
		return false, err
	}
	if inv == nil {
		return true, nil
	}
	return true, r.unclaim(inv)
}

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
	power, err := m.PowerState(r.h.ctx)
	if err != nil {
		r.SetCondition(equinixv1.InstanceDeleting, metav1.ConditionTrue, equinixv1.ReasonBMCFailed,
			fmt.Sprintf("reading the power of server %s before releasing it: %v", inv.Name, err))
		return false, fmt.Errorf("server %s, reading the power state: %w", inv.Name, err)
	}
	if power == machine.PowerOff {
		return true, nil
	}
	// The intent is the Deleting condition's reason (timestamps of one
	// second could not tell a power-off from the power-on of the same
	// second).
	last := r.Obj.Status.PowerRequestedAt
	c := conditions.Get(r.Obj.Status.Conditions, equinixv1.InstanceDeleting)
	sent := c != nil && c.Reason == equinixv1.ReasonPoweringOff && last != nil
	if sent && r.now().Before(last.Add(powerOffResend)) {
		r.poll()
		return false, nil
	}
	r.Obj.Status.PowerRequestedAt = nowTime(r)
	r.SetCondition(equinixv1.InstanceDeleting, metav1.ConditionTrue, equinixv1.ReasonPoweringOff,
		fmt.Sprintf("powering server %s off; it is released once it is off", inv.Name))
	if err := r.Persist(); err != nil {
		return false, err
	}
	if err := m.Power(r.h.ctx, machine.ActionOff); err != nil && !machine.MaybeApplied(err) {
		r.SetCondition(equinixv1.InstanceDeleting, metav1.ConditionTrue, equinixv1.ReasonBMCFailed,
			fmt.Sprintf("powering server %s off before releasing it: %v", inv.Name, err))
		return false, fmt.Errorf("server %s, powering off: %w", inv.Name, err)
	}
	r.poll()
	return false, nil
}

// maxPowerCycles is how many times an unhealthy server is power-cycled
// before the pool replaces it.
const maxPowerCycles = 2

// remediateOwned power-cycles a joined server whose node stays not Ready:
// at each of the first maxPowerCycles parts of the pool's
// nodeCleanupWaitInterval, once, so that the pool's replacement at its end
// comes only after the cycles failed. A node that is not Ready has nothing
// to move, as for a server's removal. Without nodeCleanupWaitInterval
// (remediation off) nothing is done; a Ready node resets the count. A
// server the fencer switched off is not cycled (see fencedServer): the
// replacement alone follows.
func (r *run) remediateOwned() error {
	st := &r.Obj.Status
	if st.Status == equinixv1.PhaseManaged {
		st.PowerCycles = 0
		return nil
	}
	pool, err := r.h.pools.Get(r.Obj.Spec.PoolName)
	if err != nil || pool.Spec.NodeCleanupWaitInterval == nil || st.Status != equinixv1.PhaseUnhealthy || st.UnhealthySince == nil ||
		st.PowerCycles >= maxPowerCycles || r.Obj.OffOnRequest() {
		return nil //nolint:nilerr // a pool not in the cache cycles nothing
	}
	step := pool.Spec.NodeCleanupWaitInterval.Duration / (maxPowerCycles + 1)
	due := st.UnhealthySince.Add(time.Duration(st.PowerCycles+1) * step)
	if last := st.PowerRequestedAt; st.PowerCycles > 0 && last != nil && last.Add(step).After(due) {
		// A cycle's server gets a whole step to come back.
		due = last.Add(step)
	}
	if left := due.Sub(r.now()); left > 0 {
		r.Requeue(left)
		return nil
	}
	inv, err := r.claimedServer()
	if err != nil || inv == nil {
		return err
	}
	if why, err := r.fencedServer(inv); err != nil || why != "" {
		if c := conditions.Get(st.Conditions, equinixv1.InstanceReady); why != "" && c != nil {
			r.SetCondition(equinixv1.InstanceReady, c.Status, c.Reason, c.Message+"; "+why)
		}
		// The pool's replacement at the end of nodeCleanupWaitInterval
		// still comes; the Inventory's watch brings the Instance back
		// when the fence is lifted.
		return err
	}
	m, ok, err := r.bmcMachine(inv, equinixv1.InstanceReady)
	if err != nil || !ok {
		return err
	}
	defer m.Release(0)
	st.PowerCycles++
	st.PowerRequestedAt = nowTime(r)
	cycles := st.PowerCycles
	if err := r.Persist(); err != nil {
		return err
	}
	if err := m.Power(r.h.ctx, machine.ActionReboot); err != nil && !machine.MaybeApplied(err) {
		return fmt.Errorf("server %s, power cycle: %w", inv.Name, err)
	}
	r.Eventf(equinixv1.ReasonPowerCycled, "node %s stays not Ready: power-cycled server %s through its BMC (%d of %d before it is replaced)",
		r.Obj.NodeName(), inv.Name, cycles, maxPowerCycles)
	r.Requeue(step)
	return nil
}
