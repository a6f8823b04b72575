package main

import (
	"context"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/network"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

// adoption lists the pool's devices once (the adoption check), for the first
// of its servers, and gives it its metro's VLANs.
func (f *floorRun) adoption(ctx context.Context, pool *equinixv1.InstancePool) (*floorPool, error) {
	f.mu.Lock()
	p := f.pools[pool.Name]
	if p == nil {
		p = &floorPool{}
		f.pools[pool.Name] = p
	}
	f.mu.Unlock()
	p.once.Do(func() {
		if _, p.err = f.metal.ListDevices(ctx, metal.ListDevicesOptions{Tag: equinixv1.PoolTag(pool.Name), Brief: true}); p.err != nil {
			return
		}
		p.vlans, p.err = f.metroVLANs(ctx, strings.ToLower(pool.Spec.Metro), network.VXLANs(&pool.Spec.InstanceTemplate))
	})
	return p, p.err
}

// metroVLANs finds or creates the VLANs once per metro: a VXLAN number is
// the metro's, whichever pool uses it.
func (f *floorRun) metroVLANs(ctx context.Context, metro string, wanted []int) (map[int]string, error) {
	f.mu.Lock()
	m := f.metros[metro]
	if m == nil {
		m = &floorMetro{vlans: map[int]string{}}
		f.metros[metro] = m
	}
	f.mu.Unlock()
	m.once.Do(func() {
		if len(wanted) == 0 {
			return
		}
		existing, err := f.metal.ListVLANs(ctx, metro)
		if m.err = err; err != nil {
			return
		}
		for _, v := range existing {
			m.vlans[v.VXLAN] = v.ID
		}
		for _, vx := range wanted {
			if _, ok := m.vlans[vx]; ok {
				continue
			}
			created, err := f.metal.CreateVLAN(ctx, metal.CreateVLANRequest{Metro: metro, VXLAN: vx, Description: "floor"})
			if m.err = err; err != nil {
				return
			}
			m.vlans[vx] = created.ID
		}
	})
	return m.vlans, m.err
}

// active reads the device until it is active.
func (f *floorRun) active(ctx context.Context, id string) (*metal.Device, error) {
	var dev *metal.Device
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		dev, err = f.metal.GetDevice(ctx, id)
		return err == nil && dev.State == metal.DeviceStateActive, err
	})
	return dev, err
}

// ports converges the device's ports as the controller does.
func (f *floorRun) ports(ctx context.Context, dev *metal.Device, tmpl *equinixv1.InstanceTemplate, phase network.Phase, vlans map[int]string) (*metal.Device, error) {
	return convergePorts(dev, tmpl, phase, vlans,
		func(s network.Step) (*metal.Port, error) { return s.Send(ctx, f.metal) },
		func(id string) (*metal.Device, error) { return f.metal.GetDevice(ctx, id) })
}

// configure puts the installer and the join configuration on the device.
func (f *floorRun) configure(ctx context.Context, dev *metal.Device, name string, tmpl *equinixv1.InstanceTemplate) error {
	hash, err := harvester.HashPassword("floor-console-password")
	if err != nil {
		return err
	}
	iso, err := harvester.ISOURL(harvesterVersion, "")
	if err != nil {
		return err
	}
	vlan, err := harvester.ManagementVLANID(*tmpl)
	if err != nil {
		return err
	}
	macs := dev.MACs()
	cfg, err := harvester.RenderJoinConfig(harvester.JoinConfigInput{
		ServerURL: "https://" + vip + ":443", Token: joinToken, Hostname: name, PasswordHash: hash,
		MACs: []string{macs[tmpl.ManagementInterface[0]]}, BondOptions: tmpl.ManagementBondingOptions,
		VLANID: vlan, ISOURL: iso, InstallDevice: tmpl.InstallDevice,
	})
	if err != nil {
		return err
	}
	script, err := harvester.InstallerScriptURL(f.ipxeURL, harvesterVersion, equinixv1.BootModeReinstall, tmpl.ManagementBondingOptions)
	if err != nil {
		return err
	}
	userdata, never := redact.Sensitive(cfg), false
	_, err = f.metal.UpdateDevice(ctx, dev.ID, metal.DeviceUpdate{IPXEScriptURL: &script, Userdata: &userdata, AlwaysPXE: &never})
	return err
}
