package ownedserver

import (
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
	"github.com/harvester/harvester-equinix-addon/pkg/joininfo"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/bmcdriver"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// run is the provider's part of one pass over one Instance: its steps, in
// the order the Instance chain takes them (see provision.Steps). Every BMC
// command goes through the hardware mode's one driver, so the server's BMC
// keeps one session whichever chain asks, and every command is stored as
// an intent before it is sent, and never sent twice.
type run struct {
	*provision.Pass
	p *Provider
	// held is the server the Instance holds, once read in this pass.
	held     *seederv1alpha1.Inventory
	heldRead bool
	// offer is what the server's BMC offers to boot with, once read in
	// this pass.
	offer *bmcdriver.BootOffer
}

var _ provision.Steps = (*run)(nil)

// Provision claims a free server (an Inventory), then sets a one-time
// network boot and powers it on through its BMC, into the installer.
func (r *run) Provision() (bool, error) {
	inv, err := r.claimedServer()
	if err != nil {
		return false, err
	}
	if inv == nil && r.Obj.Status.Server != "" {
		r.SetPhase(equinixv1.PhaseFailed)
		r.SetCondition(equinixv1.InstanceServerClaimed, metav1.ConditionFalse, equinixv1.ReasonServerGone, fmt.Sprintf(
			"Inventory %s/%s is gone or no longer carries this Instance's claim; the pool replaces this server",
			seederv1alpha1.InventoryNamespace, r.Obj.Status.Server))
		return false, nil
	}
	if r.Obj.Status.NetworkBootRequestedAt == nil {
		if known, err := r.joinInfoKnown(); err != nil || !known {
			return false, err
		}
	}
	if inv == nil {
		var unnamable int
		var quarantined []string
		if inv, unnamable, quarantined, err = r.claim(); err != nil {
			return false, err
		}
		if inv == nil {
			r.SetPhase(equinixv1.PhasePending)
			r.Obj.Status.WaitingFor = "free server"
			reason, msg := equinixv1.ReasonNoFreeServer, noFreeServer(unnamable)
			if len(quarantined) > 0 {
				reason, msg = equinixv1.ReasonServersQuarantined, msg+quarantinedMessage(quarantined)
			}
			r.SetCondition(equinixv1.InstanceServerClaimed, metav1.ConditionFalse, reason, msg)
			// The Inventories' watch brings the Instance back when one frees up.
			r.Requeue(4 * r.PollInterval())
			return false, nil
		}
	}
	if r.Obj.Status.Server != inv.Name {
		// Stored at once: the claim is the create of this provider.
		r.Obj.Status.Server = inv.Name
		r.Obj.Status.DeviceCreatedAt = r.NowTime()
		metrics.MarkBootStep(r.Obj.Name, metrics.BootStepClaimed, r.Obj.Status.DeviceCreatedAt.Time)
		if err := r.Persist(); err != nil {
			return false, err
		}
		r.Eventf(equinixv1.ReasonServerClaimed, "claimed server %s (Inventory %s/%s, management MAC %s)",
			inv.Name, inv.Namespace, inv.Name, inv.Spec.ManagementInterfaceMacAddress)
	}
	r.SetCondition(equinixv1.InstanceServerClaimed, metav1.ConditionTrue, equinixv1.ReasonServerClaimed, fmt.Sprintf(
		"claimed server %s (Inventory %s/%s, management MAC %s)", inv.Name, inv.Namespace, inv.Name, inv.Spec.ManagementInterfaceMacAddress))
	r.Obj.Status.ManagementMAC = canonicalMAC(inv.Spec.ManagementInterfaceMacAddress)
	if !bootAsked(&r.Obj.Status) {
		if ok, err := r.managementAddress(inv); err != nil || !ok {
			return false, err
		}
	}
	if r.Obj.Status.PowerRequestedAt == nil {
		if started, err := r.bootOwned(inv); err != nil || !started {
			return false, err
		}
	}
	r.bootStep(inv)
	return true, nil
}

// bootStep shows how far the server's boot went before its node
// registers, from the steps the boot endpoint saw: the phase, what it
// waits for, and the Installing condition (whose Event tells each step).
func (r *run) bootStep(inv *seederv1alpha1.Inventory) {
	st := &r.Obj.Status
	switch {
	case st.InstallConfigServedAt != nil:
		r.SetPhase(equinixv1.PhaseInstalling)
		st.WaitingFor = "installer to finish"
		r.SetCondition(equinixv1.InstanceInstalling, metav1.ConditionTrue, equinixv1.ReasonInstallerRunning, fmt.Sprintf(
			"the Harvester installer is running on server %s (it fetched its install configuration at %s); waiting for node %s to register",
			inv.Name, st.InstallConfigServedAt.UTC().Format(time.RFC3339), r.Obj.NodeName()))
	case st.BootScriptServedAt != nil:
		r.SetPhase(equinixv1.PhaseInstalling)
		st.WaitingFor = "installer to start"
		r.SetCondition(equinixv1.InstanceInstalling, metav1.ConditionTrue, equinixv1.ReasonBootScriptServed, fmt.Sprintf(
			"server %s booted from the network and fetched its installer script at %s; waiting for the installer to fetch its configuration",
			inv.Name, st.BootScriptServedAt.UTC().Format(time.RFC3339)))
	default:
		r.SetPhase(equinixv1.PhaseProvisioning)
		st.WaitingFor = "network boot"
		switch st.BootPath {
		case equinixv1.BootPathVirtualMedia:
			st.WaitingFor = "boot from virtual media"
		case equinixv1.BootPathUefiHTTP:
			st.WaitingFor = "UEFI HTTP boot"
		}
	}
}

// joinInfoKnown reports whether a server booted now could join: the
// cluster's URL, the join token and the release to install are known.
// Until they are, nothing is claimed or booted (a server booted without
// them would fetch an installer the boot endpoint has no configuration
// for); InstallConfigured says what is missing, and a change of the
// Secret, ConfigMap vip or the server-version setting brings the Instance
// back (see Watch).
func (r *run) joinInfoKnown() (bool, error) {
	_, err := r.p.joinInfo.Join()
	if err == nil {
		_, err = r.p.joinInfo.Version(r.Obj.Spec.HarvesterVersion)
	}
	if e, ok := joininfo.AsError(err); ok {
		r.SetCondition(equinixv1.InstanceInstallConfigured, metav1.ConditionFalse, e.Reason, e.Message)
		if r.Obj.Status.Server == "" {
			r.SetPhase(equinixv1.PhasePending)
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	conditions.Remove(&r.Obj.Status.Conditions, equinixv1.InstanceInstallConfigured)
	return true, nil
}

// Follow has nothing to look at: a joined server is followed through its
// Node.
func (r *run) Follow() (bool, error) { return true, nil }

// Joined ejects the boot image the addon inserted, if any (the boot
// endpoint refuses its URL from now on), and clears the server's count of
// failed installs: it works.
func (r *run) Joined() error {
	inv, err := r.heldServer()
	if err != nil || inv == nil {
		return err
	}
	if _, err := r.ejectMedia(inv, equinixv1.InstanceBootMediaEjected); err != nil {
		return err
	}
	if failedInstalls(inv) == 0 {
		return nil
	}
	cleared := inv.DeepCopy()
	delete(cleared.Annotations, equinixv1.AnnotationFailedInstalls)
	if _, err := r.p.inventories.Update(cleared); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("clearing the failed installs of Inventory %s: %w", inv.Name, err)
	}
	return nil
}

// Remediate power-cycles a server whose node stays not Ready (see
// remediateOwned).
func (r *run) Remediate() error { return r.remediateOwned() }

// Tend has nothing to do.
func (r *run) Tend() error { return nil }

// Releasing names the server and the node, if any.
func (r *run) Releasing() string {
	if r.Obj.Status.Server == "" {
		return "no server was claimed: nothing to release"
	}
	return fmt.Sprintf("releasing server %s and removing its node %s", r.Obj.Status.Server, r.Obj.NodeName())
}

// Stop powers the server off through its BMC (before its Node goes, which
// a running kubelet would register again). A server this Instance never
// booted keeps its power as it was.
func (r *run) Stop() (bool, error) {
	inv, err := r.heldServer()
	if err != nil || inv == nil || !bootAsked(&r.Obj.Status) {
		return err == nil, err
	}
	if r.Obj.Status.NetworkBootRequestedAt == nil {
		// Only the boot image was inserted: the server was not booted.
		return r.ejectMedia(inv, equinixv1.InstanceDeleting)
	}
	return r.powerOffOwned(inv)
}

// Free gives the server's management address back to its AddressPool,
// then removes the claim: the server is free again.
func (r *run) Free() error {
	inv, err := r.heldServer()
	if err != nil {
		return err
	}
	if err := r.freeManagementAddress(inv); err != nil || inv == nil {
		return err
	}
	return r.unclaim(inv)
}

// heldServer is claimedServer, read once per pass.
func (r *run) heldServer() (*seederv1alpha1.Inventory, error) {
	if r.heldRead {
		return r.held, nil
	}
	inv, err := r.claimedServer()
	if err != nil {
		return nil, err
	}
	r.held, r.heldRead = inv, true
	return inv, nil
}
