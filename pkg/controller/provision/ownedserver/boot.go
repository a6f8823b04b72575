package ownedserver

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/bootfirmware"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/bmcendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/bmcdriver"
)

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
	ep, problem, err := bmcendpoint.For(r.p.ctx, r.p.k8s.CoreV1(), inv, r.p.settings.BMCTimeout)
	if err != nil {
		return nil, false, err
	}
	if problem != nil {
		r.SetCondition(condType, metav1.ConditionFalse, problem.Reason, fmt.Sprintf("server %s: %s", inv.Name, problem.Message))
		r.Requeue(4 * r.PollInterval())
		return nil, false, nil
	}
	m := r.p.bmcs.Machine(ep, bmcdriver.MachineOptions{Owner: bmcendpoint.Owner(inv), Key: string(inv.UID),
		Interval: time.Hour, Now: r.Now})
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
	r.SetPhase(equinixv1.PhaseProvisioning)
	// r.Obj is the stored object after each Persist: its status is read
	// afresh, never through a pointer taken before.
	if r.Obj.Status.NetworkBootRequestedAt == nil {
		fw, problem := bootfirmware.For(inv, r.Obj.Spec.Servers.BootFirmware)
		if problem != nil {
			r.SetCondition(equinixv1.InstanceInstalling, metav1.ConditionFalse, problem.Reason, problem.Message)
			r.Requeue(4 * r.PollInterval())
			return false, nil
		}
		// The console password and the UUID the boot endpoint checks are
		// stored with the boot's intent, before the server can ask.
		if _, ok, err := r.ConsolePassword(); err != nil || !ok {
			return false, err
		}
		if facts, err := m.Facts(r.p.ctx); err == nil {
			r.Obj.Status.SystemUUID = facts.SystemUUID
		}
		r.Obj.Status.NetworkBootRequestedAt = r.NowTime()
		if err := r.Persist(); err != nil {
			return false, err
		}
		used, err := m.NetworkBootOnce(r.p.ctx, fw.Want)
		if err != nil && !machine.MaybeApplied(err) {
			return false, r.bmcRefused(inv, "the one-time network boot "+fw.Describe(used), err, func(st *equinixv1.InstanceStatus) { st.NetworkBootRequestedAt = nil })
		}
		r.Obj.Status.BootFirmware = bootfirmware.Name(used)
		r.Eventf(equinixv1.ReasonNetworkBoot, "asked the BMC of server %s to boot it from the network once, %s", inv.Name, fw.Describe(used))
	}
	power, err := m.PowerState(r.p.ctx)
	if err != nil {
		return false, r.bmcRefused(inv, "reading the power state", err, nil)
	}
	action, how := machine.ActionOn, "powered on"
	if power == machine.PowerOn {
		// Only a restart boots the override.
		action, how = machine.ActionReboot, "restarted"
	}
	r.Obj.Status.PowerRequestedAt = r.NowTime()
	if err := r.Persist(); err != nil {
		return false, err
	}
	if err := m.Power(r.p.ctx, action); err != nil && !machine.MaybeApplied(err) {
		return false, r.bmcRefused(inv, "powering the server on", err, func(st *equinixv1.InstanceStatus) { st.PowerRequestedAt = nil })
	}
	r.Obj.Status.InstallRequestedAt = r.NowTime()
	r.SetCondition(equinixv1.InstanceInstalling, metav1.ConditionTrue, equinixv1.ReasonNetworkBoot, fmt.Sprintf(
		"server %s was %s to boot from the network into the Harvester installer; waiting for node %s", inv.Name, how, r.Obj.NodeName()))
	return true, nil
}

// bmcRefused reports a BMC command that was not carried out. undo takes
// back its intent (nothing was sent, so it may be asked again), stored at
// once; the work queue's backoff brings the Instance back.
func (r *run) bmcRefused(inv *seederv1alpha1.Inventory, what string, err error, undo func(*equinixv1.InstanceStatus)) error {
	if undo != nil {
		// Should this write meet another (a spec edit in between), the
		// intent stays and the command counts as sent, as one whose answer
		// was lost: it is never sent twice.
		undo(&r.Obj.Status)
		if perr := r.Persist(); perr != nil {
			return perr
		}
	}
	r.SetCondition(equinixv1.InstanceInstalling, metav1.ConditionFalse, equinixv1.ReasonBMCFailed,
		fmt.Sprintf("the BMC of server %s: %s failed: %v", inv.Name, what, err))
	return fmt.Errorf("server %s, %s: %w", inv.Name, what, err)
}
