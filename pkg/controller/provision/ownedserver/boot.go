package ownedserver

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/bootfirmware"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/bmcendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/bmcdriver"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
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

// bootOwned sets the server's one-time boot into the installer, by the
// boot path chosen for it, and powers it on (or cycles it, when it is on),
// each command once: its intent is stored first, and a command whose
// answer was lost counts as sent. It reports whether all were sent.
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
		if set, err := r.bootOnce(inv, m); err != nil || !set {
			return false, err
		}
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
	metrics.MarkBootStep(r.Obj.Name, metrics.BootStepPowerRequested, r.Obj.Status.PowerRequestedAt.Time)
	if err := r.Persist(); err != nil {
		return false, err
	}
	if err := m.Power(r.p.ctx, action); err != nil && !machine.MaybeApplied(err) {
		return false, r.bmcRefused(inv, "powering the server on", err, func(st *equinixv1.InstanceStatus) { st.PowerRequestedAt = nil })
	}
	r.Obj.Status.InstallRequestedAt = r.NowTime()
	metrics.ObserveBootPhase(metrics.BootPhasePowerOn,
		metrics.BootStepTime(r.Obj.Name, metrics.BootStepClaimed, timeOf(r.Obj.Status.DeviceCreatedAt)), r.Now())
	reason, from := bootStarted(r.Obj.Status.BootPath)
	r.SetCondition(equinixv1.InstanceInstalling, metav1.ConditionTrue, reason, fmt.Sprintf(
		"server %s was %s to boot %s into the Harvester installer (boot path %s); waiting for node %s",
		inv.Name, how, from, r.Obj.Status.BootPath, r.Obj.NodeName()))
	return true, nil
}

// bootStarted is the Installing condition's reason once the server was
// powered on by path, and what it boots from.
func bootStarted(path string) (string, string) {
	switch path {
	case equinixv1.BootPathVirtualMedia:
		return equinixv1.ReasonBootMedia, "from the boot image in its virtual CD"
	case equinixv1.BootPathUefiHTTP:
		return equinixv1.ReasonHTTPBoot, "from the boot image's URL by UEFI HTTP"
	}
	return equinixv1.ReasonNetworkBoot, "from the network"
}

// bootOnce chooses the server's boot path, once per claim, and sets its
// one-time boot by it. A path the BMC turns down when asked (someone
// else's media in its virtual CD, a command it does not take) gives way
// to the next. It reports whether the boot was set.
func (r *run) bootOnce(inv *seederv1alpha1.Inventory, m *bmcdriver.Machine) (bool, error) {
	fw, problem := bootfirmware.For(inv, r.Obj.Spec.Servers.BootFirmware)
	if problem != nil {
		r.SetCondition(equinixv1.InstanceInstalling, metav1.ConditionFalse, problem.Reason, problem.Message)
		r.Requeue(4 * r.PollInterval())
		return false, nil
	}
	if r.Obj.Status.BootPath == "" {
		// The console password and the UUID the boot endpoint checks are
		// stored with the boot's first intent, before the server can ask.
		if _, ok, err := r.ConsolePassword(); err != nil || !ok {
			return false, err
		}
		if facts, err := m.Facts(r.p.ctx); err == nil {
			r.Obj.Status.SystemUUID = facts.SystemUUID
			// The other NICs' MACs let the boot endpoint tell a server
			// that boots on the wrong port.
			r.Obj.Status.MACAddresses = facts.MACs
		}
	}
	refused := map[string]string{}
	for {
		if r.Obj.Status.BootPath == "" {
			if chosen, err := r.choosePath(inv, m, fw, refused); err != nil || !chosen {
				return false, err
			}
		}
		var set bool
		var turnedDown string
		var err error
		switch path := r.Obj.Status.BootPath; path {
		case equinixv1.BootPathVirtualMedia:
			set, turnedDown, err = r.bootFromMedia(inv, m, fw)
		case equinixv1.BootPathUefiHTTP:
			set, turnedDown, err = r.bootFromHTTP(inv, m)
		default:
			return r.bootFromNetwork(inv, m, fw)
		}
		if turnedDown == "" || err != nil {
			return set, err
		}
		refused[r.Obj.Status.BootPath] = turnedDown
		r.Obj.Status.BootPath = ""
	}
}

// choosePath chooses the boot path from what the BMC offers, the boot
// endpoint and the pool's pin, and tells it (an Event, the Installing
// condition); it reports false, with the Installing condition saying
// why, when the pin cannot be met.
func (r *run) choosePath(inv *seederv1alpha1.Inventory, m *bmcdriver.Machine, fw bootfirmware.Choice, refused map[string]string) (bool, error) {
	if r.offer == nil {
		offer, err := m.BootOffer(r.p.ctx)
		if err != nil {
			return false, r.bmcRefused(inv, "reading what it can boot the server with", err, nil)
		}
		r.offer = &offer
	}
	offer := *r.offer
	base, noBase, err := r.baseURL()
	if err != nil {
		return false, err
	}
	choice := chooseBootPath(pathOffer{
		IPMI: offer.Protocol == bmc.ProtocolIPMI, Caps: offer.Capabilities,
		NoImages: r.p.media.noImages(inv.Spec.Arch, fw.Want), NoBaseURL: noBase,
		Legacy: fw.Want == bmc.BootFirmwareLegacy, Pin: r.pinnedPath(), Refused: refused,
	})
	if choice.Unavailable {
		msg := fmt.Sprintf("server %s: %s", inv.Name, choice.Why)
		if c := conditions.Get(r.Obj.Status.Conditions, equinixv1.InstanceInstalling); c == nil || c.Message != msg {
			r.Eventf(equinixv1.ReasonBootPathUnavailable, "%s", msg)
		}
		r.SetCondition(equinixv1.InstanceInstalling, metav1.ConditionFalse, equinixv1.ReasonBootPathUnavailable, msg)
		// The BMC's offer may change (media ejected, firmware updated);
		// a new pin reaches the Instance through its pool.
		r.Requeue(4 * r.PollInterval())
		return false, nil
	}
	r.Obj.Status.BootPath = choice.Path
	r.Obj.Status.BootMediaEndpoint = ""
	if choice.Path != equinixv1.BootPathPXE {
		r.Obj.Status.BootMediaEndpoint = base
	}
	msg := fmt.Sprintf("server %s boots by %s", inv.Name, choice.Why)
	r.Eventf(equinixv1.ReasonBootPathChosen, "%s", msg)
	r.SetCondition(equinixv1.InstanceInstalling, metav1.ConditionFalse, equinixv1.ReasonBootPathChosen, msg)
	return true, nil
}

// pinnedPath is the pool's spec.servers.bootPath as it is now: the pin
// is outside the template the Instance was made from (a change rolls
// nothing out), so a server claimed before a change is booted by the new
// one. Without its pool, the Instance's own.
func (r *run) pinnedPath() string {
	if pool, err := r.p.pools.Get(r.Obj.Spec.PoolName); err == nil && pool.Spec.Servers != nil {
		return pool.Spec.Servers.BootPath
	}
	return r.Obj.Spec.Servers.BootPath
}

// bootFromNetwork sets the one-time network boot (PXE).
func (r *run) bootFromNetwork(inv *seederv1alpha1.Inventory, m *bmcdriver.Machine, fw bootfirmware.Choice) (bool, error) {
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
	return true, nil
}

// bootFromMedia inserts the claim's boot image in the BMC's virtual CD
// and sets a one-time boot from it. turnedDown says why the BMC would not
// take the image (someone else's media, which is never ejected nor
// replaced; no virtual media after all): nothing was inserted.
func (r *run) bootFromMedia(inv *seederv1alpha1.Inventory, m *bmcdriver.Machine, fw bootfirmware.Choice) (bool, string, error) {
	if r.Obj.Status.BootMediaInsertedAt == nil {
		image, err := r.imageURL(r.Obj.Status.BootMediaEndpoint)
		if err != nil {
			return false, "", err
		}
		// The claim opens with this intent: a BMC may read the image as
		// it is inserted.
		if took, err := r.takeImageSlot(inv, func(st *equinixv1.InstanceStatus) { st.BootMediaInsertedAt = r.NowTime() }); err != nil || !took {
			return false, "", err
		}
		if err := m.InsertMedia(r.p.ctx, image); err != nil && !machine.MaybeApplied(err) {
			if why := turnedDown(err); why != "" {
				r.Obj.Status.BootMediaInsertedAt = nil
				return false, why, r.Persist()
			}
			return false, "", r.bmcRefused(inv, "inserting the boot image in its virtual CD", err,
				func(st *equinixv1.InstanceStatus) { st.BootMediaInsertedAt = nil })
		}
		r.Eventf(equinixv1.ReasonBootMedia, "asked the BMC of server %s to insert the claim's boot image in its virtual CD", inv.Name)
	}
	r.Obj.Status.NetworkBootRequestedAt = r.NowTime()
	if err := r.Persist(); err != nil {
		return false, "", err
	}
	used, err := m.BootOnce(r.p.ctx, bmc.BootCD, fw.Want)
	if err != nil && !machine.MaybeApplied(err) {
		return false, "", r.bmcRefused(inv, "the one-time boot from its virtual CD "+fw.Describe(used), err,
			func(st *equinixv1.InstanceStatus) { st.NetworkBootRequestedAt = nil })
	}
	r.Obj.Status.BootFirmware = bootfirmware.Name(used)
	r.Eventf(equinixv1.ReasonBootMedia, "asked the BMC of server %s to boot it once from its virtual CD, %s", inv.Name, fw.Describe(used))
	return true, "", nil
}

// bootFromHTTP sets a one-time UEFI HTTP boot from the claim's boot
// image: edk2's HTTP boot client takes an ISO as a RAM disk and boots
// its EFI loader, as from a CD.
func (r *run) bootFromHTTP(inv *seederv1alpha1.Inventory, m *bmcdriver.Machine) (bool, string, error) {
	image, err := r.imageURL(r.Obj.Status.BootMediaEndpoint)
	if err != nil {
		return false, "", err
	}
	if took, err := r.takeImageSlot(inv, func(st *equinixv1.InstanceStatus) { st.NetworkBootRequestedAt = r.NowTime() }); err != nil || !took {
		return false, "", err
	}
	if err := m.BootOnceHTTP(r.p.ctx, image); err != nil && !machine.MaybeApplied(err) {
		if why := turnedDown(err); why != "" {
			r.Obj.Status.NetworkBootRequestedAt = nil
			return false, why, r.Persist()
		}
		return false, "", r.bmcRefused(inv, "the one-time UEFI HTTP boot", err, func(st *equinixv1.InstanceStatus) { st.NetworkBootRequestedAt = nil })
	}
	r.Obj.Status.BootFirmware = equinixv1.BootFirmwareUEFI
	r.Eventf(equinixv1.ReasonHTTPBoot, "asked the BMC of server %s to boot it once from the claim's boot image by UEFI HTTP", inv.Name)
	return true, "", nil
}

// turnedDown says why the BMC turned a boot path down for good, "" when
// it did not: someone else's media in its virtual CD, or a command it
// does not take. Anything else (unreachable, a refused login) is asked
// again on the same path.
func turnedDown(err error) string {
	switch bmcdriver.BMCClass(err) {
	case failure.Busy:
		return "the BMC's virtual CD holds media the addon did not insert, which it never ejects nor replaces (" + failure.Message(err) + ")"
	case failure.Unsupported:
		return "the BMC refused it (" + failure.Message(err) + ")"
	}
	return ""
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
