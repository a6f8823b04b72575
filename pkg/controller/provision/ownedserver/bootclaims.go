package ownedserver

import (
	"context"
	"fmt"
	"net"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
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
	claim := bootendpoint.Claim{ID: string(inst.UID), Instance: inst.Name, Server: inv.Name, MAC: mac,
		SystemUUID: inst.Status.SystemUUID, Arch: inv.Spec.Arch, Version: version, Bond: inst.Spec.ManagementBondingOptions}
	if inst.Spec.BootMode == equinixv1.BootModeSingleBoot {
		claim.BootMode = equinixv1.BootModeSingleBoot
	}
	return claim, true
}

// holder finds the claimed Inventory of that MAC and the Instance whose
// claim is open on it.
func (c BootClaims) holder(mac string) (*seederv1alpha1.Inventory, *equinixv1.Instance, bool) {
	claimed, err := labels.NewRequirement(equinixv1.LabelClaimedBy, selection.Exists, nil)
	if err != nil {
		return nil, nil, false
	}
	invs, err := c.p.inventories.Cache().List(seederv1alpha1.InventoryNamespace, labels.NewSelector().Add(*claimed))
	if err != nil {
		return nil, nil, false
	}
	for _, inv := range invs {
		if canonicalMAC(inv.Spec.ManagementInterfaceMacAddress) != mac {
			continue
		}
		inst, err := c.p.instances.Get(inv.Labels[equinixv1.LabelClaimedBy])
		if err != nil || !common.ClaimedBy(inv, inst) || inst.DeletionTimestamp != nil || inst.Status.JoinedAt != nil ||
			inst.Status.Server != inv.Name || inst.Status.NetworkBootRequestedAt == nil {
			continue
		}
		return inv, inst, true
	}
	return nil, nil, false
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
	_, inst, ok := c.holder(mac)
	if !ok {
		return
	}
	c.p.recorder.Eventf(inst, equinixv1.EventType(reason), reason,
		"the boot endpoint refused a request naming the MAC of server %s (%s)", inst.Status.Server, reason)
}
