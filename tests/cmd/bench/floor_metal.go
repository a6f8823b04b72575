package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/network"
)

// adoption lists the pool's devices once (the adoption check), for the first
// of its servers, and gives it its metro's VLANs.
func (f *floorRun) adoption(ctx context.Context, pool *v1.InstancePool) (*floorPool, error) {
	f.mu.Lock()
	p := f.pools[pool.Name]
	if p == nil {
		p = &floorPool{}
		f.pools[pool.Name] = p
	}
	f.mu.Unlock()
	p.once.Do(func() {
		if _, p.err = f.metal.ListDevices(ctx, metal.ListDevicesOptions{Tag: v1.PoolTag(pool.Name), Brief: true}); p.err != nil {
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

// ports runs the planner's steps, reading the device back only after a
// structural step whose answer does not show it.
func (f *floorRun) ports(ctx context.Context, dev *metal.Device, tmpl *v1.InstanceTemplate, phase network.Phase, vlans map[int]string) (*metal.Device, error) {
	for {
		want, err := network.Want(dev.Ports, tmpl, phase)
		if err != nil {
			return nil, err
		}
		steps := network.Steps(dev.Ports, want, vlans)
		if len(steps) == 0 {
			return dev, nil
		}
		dev = dev.DeepCopy()
		for _, s := range steps {
			answer, err := f.step(ctx, s)
			if err != nil {
				return nil, fmt.Errorf("%s on device %s: %w", s, dev.ID, err)
			}
			if !s.Structural() {
				dev.Ports = network.AfterVLANSteps(dev.Ports, []network.Step{s})
				continue
			}
			if ports, ok := network.AfterAnswer(dev.Ports, s, answer); ok {
				dev.Ports = ports
			} else if dev, err = f.metal.GetDevice(ctx, dev.ID); err != nil {
				return nil, err
			}
			break
		}
	}
}

func (f *floorRun) step(ctx context.Context, s network.Step) (*metal.Port, error) {
	switch s.Op {
	case network.OpAssign:
		return nil, f.metal.AssignVLAN(ctx, s.PortID, s.VLANID)
	case network.OpUnassign:
		return nil, f.metal.UnassignVLAN(ctx, s.PortID, s.VLANID)
	case network.OpBond:
		return f.metal.BondPort(ctx, s.PortID, s.Bulk)
	case network.OpDisbond:
		return f.metal.DisbondPort(ctx, s.PortID, s.Bulk)
	case network.OpToLayer2:
		return f.metal.ConvertLayer2(ctx, s.PortID)
	default:
		return f.metal.ConvertLayer3(ctx, s.PortID)
	}
}

// configure puts the installer and the join configuration on the device.
func (f *floorRun) configure(ctx context.Context, dev *metal.Device, name string, tmpl *v1.InstanceTemplate) error {
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
	script, err := harvester.InstallerScriptURL(f.ipxeURL, harvesterVersion, v1.BootModeReinstall, tmpl.ManagementBondingOptions)
	if err != nil {
		return err
	}
	userdata, never := metal.Sensitive(cfg), false
	_, err = f.metal.UpdateDevice(ctx, dev.ID, metal.DeviceUpdate{IPXEScriptURL: &script, Userdata: &userdata, AlwaysPXE: &never})
	return err
}
