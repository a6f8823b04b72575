package ownedserver

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/util/retry"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/bootmedia"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// BootClaims are the open claims of servers people own, as the boot
// endpoint asks for them, read from the caches: a claim is open while an
// Instance that is not being deleted holds the server (its Inventory's claim
// and its status agree) and its Node has not joined.
type BootClaims struct{ p *Provider }

var _ bootendpoint.Claims = BootClaims{}

// BootClaims returns the handler's claims for the boot endpoint.
func (p *Provider) BootClaims() BootClaims { return BootClaims{p: p} }

// canonicalMAC is a MAC as the endpoint compares them: lower case, colons.
func canonicalMAC(s string) string {
	hw, err := net.ParseMAC(strings.TrimSpace(s))
	if err != nil {
		return ""
	}
	return strings.ToLower(hw.String())
}

// Open returns the open claim of the server whose management MAC is mac.
func (c BootClaims) Open(mac string) (bootendpoint.Claim, bool) {
	inv, inst, ok := c.holder(mac)
	if !ok {
		return bootendpoint.Claim{}, false
	}
	version, err := c.p.joinInfo.Version(inst.Spec.HarvesterVersion)
	if err != nil {
		// The script cannot be made: the endpoint refuses, and the
		// pool's JoinInfoReady says why.
		version = ""
	}
	static, err := staticAddress(inst)
	if err != nil {
		// Only the addon writes the address; one it cannot read boots
		// nothing rather than a server that asks DHCP where none is.
		return bootendpoint.Claim{}, false
	}
	claim := bootendpoint.Claim{ID: string(inst.UID), Instance: inst.Name, Server: inv.Name, MAC: mac,
		SystemUUID: inst.Status.SystemUUID, Arch: inv.Spec.Arch, Version: version, Bond: inst.Spec.ManagementBondingOptions}
	if static != nil {
		claim.Static = &bootmedia.StaticAddress{Address: static.Address, Gateway: static.Gateway}
		if len(static.Nameservers) > 0 {
			claim.Static.DNS = static.Nameservers[0]
		}
	}
	if inst.Spec.BootMode == equinixv1.BootModeSingleBoot {
		claim.BootMode = equinixv1.BootModeSingleBoot
	}
	return claim, true
}

// holder finds the claimed Inventory of that MAC and the Instance whose
// claim is open on it.
func (c BootClaims) holder(mac string) (*seederv1alpha1.Inventory, *equinixv1.Instance, bool) {
	return c.openClaim(func(inv *seederv1alpha1.Inventory, _ *equinixv1.Instance) bool {
		return canonicalMAC(inv.Spec.ManagementInterfaceMacAddress) == mac
	})
}

// otherNICHolder finds the open claim of the server one of whose other
// NICs (as its BMC reported them before the network boot) has that MAC.
func (c BootClaims) otherNICHolder(mac string) (*seederv1alpha1.Inventory, *equinixv1.Instance, bool) {
	return c.openClaim(func(inv *seederv1alpha1.Inventory, inst *equinixv1.Instance) bool {
		if canonicalMAC(inv.Spec.ManagementInterfaceMacAddress) == mac {
			return false
		}
		for _, m := range inst.Status.MACAddresses {
			if canonicalMAC(m) == mac {
				return true
			}
		}
		return false
	})
}

// openClaim finds the claimed Inventory that is chosen and the Instance
// whose claim is open on it.
func (c BootClaims) openClaim(chosen func(*seederv1alpha1.Inventory, *equinixv1.Instance) bool) (*seederv1alpha1.Inventory, *equinixv1.Instance, bool) {
	claimed, err := labels.NewRequirement(equinixv1.LabelClaimedBy, selection.Exists, nil)
	if err != nil {
		return nil, nil, false
	}
	invs, err := c.p.inventories.Cache().List(seederv1alpha1.InventoryNamespace, labels.NewSelector().Add(*claimed))
	if err != nil {
		return nil, nil, false
	}
	for _, inv := range invs {
		inst, err := c.p.instances.Get(inv.Labels[equinixv1.LabelClaimedBy])
		if err == nil {
			// The boot's intent is stored just before the BMC's command, and
			// a server that boots fast asks before the cache shows it.
			inst = c.p.instanceWrites.Latest(inst)
		}
		if err != nil || !common.ClaimedBy(inv, inst) || inst.DeletionTimestamp != nil || inst.Status.JoinedAt != nil ||
			inst.Status.Server != inv.Name || !bootAsked(&inst.Status) || !chosen(inv, inst) {
			continue
		}
		return inv, inst, true
	}
	return nil, nil, false
}

// bootAsked says whether the server's boot was asked of its BMC: its
// claim is open from the first command's intent, the boot image's
// insert (a BMC may read the image as it is inserted) or the one-time
// boot.
func bootAsked(st *equinixv1.InstanceStatus) bool {
	return st.NetworkBootRequestedAt != nil || st.BootMediaInsertedAt != nil
}

// InstallConfig renders the claim's Harvester install configuration: the
// cluster's URL and join token, the server's Inventory name as hostname
// (the node's name, by which Harvester finds its Inventory) with the
// Instance's name as the node's instance label, its console password, the management interface by the claim's MAC, the
// install disk (the Inventory's primaryDisk, else the pool's
// installDevice) and the release's ISO for the server's architecture.
func (c BootClaims) InstallConfig(_ context.Context, b bootendpoint.Claim) ([]byte, error) {
	inv, inst, ok := c.holder(b.MAC)
	if !ok || string(inst.UID) != b.ID {
		return nil, fmt.Errorf("the claim of %s ended", b.MAC)
	}
	join, err := c.p.joinInfo.Join()
	if err != nil {
		return nil, fmt.Errorf("claim of %s: %w", b.Instance, err)
	}
	iso, err := harvester.ISOURLForArch(b.Version, b.Arch, inst.Spec.ISOURL)
	if err != nil {
		return nil, fmt.Errorf("claim of %s: %w", b.Instance, err)
	}
	sec, err := c.p.secrets.Get(c.p.settings.Namespace, inst.Status.PasswordSecret)
	if err != nil {
		return nil, fmt.Errorf("claim of %s: console password: %w", b.Instance, err)
	}
	hash, err := harvester.HashPassword(string(sec.Data[provision.PasswordKey]))
	if err != nil {
		return nil, fmt.Errorf("claim of %s: %w", b.Instance, err)
	}
	in := harvester.JoinConfigInput{
		ServerURL: join.ServerURL, Token: join.Token, Hostname: inst.NodeName(), Instance: inst.Name, PasswordHash: hash,
		SSHKeys: inst.Spec.SSHKeys, BondOptions: inst.Spec.ManagementBondingOptions,
		InstallDevice: inv.Spec.PrimaryDisk, ISOURL: iso,
		Labels: map[string]string{equinixv1.LabelPool: inst.Spec.PoolName},
	}
	if in.Static, err = staticAddress(inst); err != nil {
		return nil, fmt.Errorf("claim of %s: %w", b.Instance, err)
	}
	if in.InstallDevice == "" {
		in.InstallDevice = inst.Spec.InstallDevice
	}
	if b.BootMode == equinixv1.BootModeSingleBoot {
		in.SingleBoot = true
	} else {
		in.MACs = []string{b.MAC}
	}
	return harvester.RenderJoinConfig(in)
}

// Refused tells the Instance whose server a refused request named, if
// any, as a Warning Event (the endpoint counts the refusal itself).
func (c BootClaims) Refused(mac, reason string) {
	if _, inst, ok := c.otherNICHolder(mac); ok && reason == equinixv1.ReasonBootOtherNIC {
		c.p.recorder.Eventf(inst, equinixv1.EventType(reason), reason,
			"the boot endpoint refused a request naming MAC %s, another NIC of server %s: its management NIC is %s. "+
				"The server booted from the network on the wrong port: set its boot order (or cable) to the management NIC, "+
				"or correct managementInterfaceMacAddress on its Inventory", mac, inst.Status.Server, inst.Status.ManagementMAC)
		return
	}
	_, inst, ok := c.holder(mac)
	if !ok {
		return
	}
	c.p.recorder.Eventf(inst, equinixv1.EventType(reason), reason,
		"the boot endpoint refused a request naming the MAC of server %s (%s)", inst.Status.Server, reason)
}

// OtherNIC returns the open claim of the server one of whose other NICs
// has the MAC mac.
func (c BootClaims) OtherNIC(mac string) (bootendpoint.Claim, bool) {
	inv, inst, ok := c.otherNICHolder(mac)
	if !ok {
		return bootendpoint.Claim{}, false
	}
	return bootendpoint.Claim{ID: string(inst.UID), Instance: inst.Name, Server: inv.Name,
		MAC: canonicalMAC(inv.Spec.ManagementInterfaceMacAddress)}, true
}

// Served writes the step a served file marks into the claim's Instance
// (the first time only), and times the phase it ends; the Instance's
// chain shows the step (phase, condition, Event, waitingFor). The chain's
// own next write of an older copy conflicts and reads it again rather
// than undo it.
func (c BootClaims) Served(b bootendpoint.Claim, file string) {
	_, inst, ok := c.holder(b.MAC)
	if !ok || string(inst.UID) != b.ID {
		return
	}
	now := time.Now()
	st := inst.Status
	var field, reason string
	switch file {
	case bootendpoint.FileScript:
		if st.BootScriptServedAt != nil {
			return
		}
		field, reason = "bootScriptServedAt", equinixv1.ReasonBootScriptServed
	case bootendpoint.FileConfig:
		if st.InstallConfigServedAt != nil {
			return
		}
		field, reason = "installConfigServedAt", equinixv1.ReasonInstallerRunning
	default:
		return
	}
	// The status is written over the latest copy this process knows (the
	// chain's own last write, else the cache's), read again after a
	// conflict (the role reads Instances only through its watch); a step
	// already there is kept. The write is the chain's latest from then on,
	// so that its next pass does not conflict with it either. The phase
	// it ends is timed once, by the write that stored it.
	var phase, step string
	var from time.Time
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		phase = ""
		cached, err := c.p.instances.Get(inst.Name)
		if err != nil || cached.UID != inst.UID {
			return err
		}
		cur := c.p.instanceWrites.Latest(cached).DeepCopy()
		at := metav1.NewTime(now)
		switch {
		case file == bootendpoint.FileScript && cur.Status.BootScriptServedAt == nil:
			// From the power command's intent, stored before the command:
			// the server cannot ask before it.
			cur.Status.BootScriptServedAt = &at
			phase, step = metrics.BootPhaseNetworkBoot, metrics.BootStepScriptServed
			from = metrics.BootStepTime(inst.Name, metrics.BootStepPowerRequested, timeOf(cur.Status.PowerRequestedAt))
		case file == bootendpoint.FileConfig && cur.Status.InstallConfigServedAt == nil:
			cur.Status.InstallConfigServedAt = &at
			phase, step = metrics.BootPhaseInstallerStart, metrics.BootStepConfigServed
			from = metrics.BootStepTime(inst.Name, metrics.BootStepScriptServed, timeOf(cur.Status.BootScriptServedAt))
		default:
			return nil
		}
		written, err := c.p.instanceStatus.UpdateStatus(cur)
		if err == nil {
			c.p.instanceWrites.Wrote(written)
		}
		return err
	})
	if err == nil && phase != "" {
		metrics.MarkBootStep(inst.Name, step, now)
		metrics.ObserveBootPhase(phase, from, now)
	}
	if err != nil {
		// The Instance's chain tells the step (its Installing condition,
		// and that condition's Event) once the status holds it; without
		// the status, an Event tells it here.
		logrus.WithField("instance", inst.Name).Warnf("recording %s in the status: %v", field, err)
		c.p.recorder.Eventf(inst, corev1.EventTypeNormal, reason, "the boot endpoint served server %s its %s", st.Server, file)
	}
}

// timeOf is t's time, zero for none.
func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

// staticAddress is the Instance's static management address with its
// gateway and the pool's name servers, nil when the server takes its
// address from DHCP.
func staticAddress(inst *equinixv1.Instance) (*harvester.StaticAddress, error) {
	st := inst.Status
	if st.ManagementAddress == "" {
		return nil, nil
	}
	addr, err := netip.ParsePrefix(st.ManagementAddress)
	if err != nil {
		return nil, fmt.Errorf("status.managementAddress: %w", err)
	}
	gw, err := netip.ParseAddr(st.ManagementGateway)
	if err != nil {
		return nil, fmt.Errorf("status.managementGateway: %w", err)
	}
	out := &harvester.StaticAddress{Address: addr, Gateway: gw}
	if inst.Spec.Servers != nil {
		for _, s := range inst.Spec.Servers.Nameservers {
			ns, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("spec.servers.nameservers: %w", err)
			}
			out.Nameservers = append(out.Nameservers, ns)
		}
	}
	return out, nil
}
