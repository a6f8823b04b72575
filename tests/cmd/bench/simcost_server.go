package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/network"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// costWorld is one simulator of the simulator-cost scenario, its fleet and
// what its calls cost: a client of pkg/metal on the real SDK, as the
// controller has, with the handling clock read around each call.
type costWorld struct {
	name    string
	metal   *metalWorld
	client  metal.Client
	ipxeURL string
	// installTime is the agent's simulated install, left out of its cost.
	installTime time.Duration
	// passwordHash is one console password hash for every server: hashing
	// one per server would cost the benchmark more than the calls it
	// measures.
	passwordHash string

	mu    sync.Mutex
	vlans map[int]string
	// booted is when each device's last iPXE boot was delivered.
	booted map[string]time.Time
	// ops is the handling time and request count of each operation,
	// measured calls only.
	ops      map[string]*opCost
	measured bool
	// joins sums the agent's time from a boot to the Node registered,
	// past the install time, over measured servers.
	joins     time.Duration
	joinCount int
}

// opCost is what one kind of call cost the simulator.
type opCost struct {
	calls    int
	requests int64
	handling time.Duration
}

func (w *costWorld) watchBoots() {
	w.metal.sim.Subscribe(func(n metalsim.Notification) {
		if n.Type == metalsim.DeviceBooted && n.Boot != nil && n.Boot.PXE {
			w.mu.Lock()
			w.booted[n.DeviceID] = time.Now()
			w.mu.Unlock()
		}
	})
}

// call runs one client call and, in the measured phase, charges the
// simulator's handling of it (every page, every retry) to op. Calls are
// sequential per world while measuring, so the clock's difference is this
// call's alone.
func (w *costWorld) call(op string, fn func() error) error {
	w.mu.Lock()
	measured := w.measured
	w.mu.Unlock()
	if !measured {
		if err := fn(); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
	}
	d0, n0 := w.metal.handling.settled()
	err := fn()
	d1, n1 := w.metal.handling.settled()
	w.mu.Lock()
	c := w.ops[op]
	if c == nil {
		c = &opCost{}
		w.ops[op] = c
	}
	c.calls++
	c.requests += n1 - n0
	c.handling += d1 - d0
	w.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// costServer is one server of a world: its pool and its tags.
type costServer struct {
	name     string
	pool     string
	tmpl     *equinixv1.InstanceTemplate
	instance string // the instance tag
	// fleet servers only set the scene: they take the VLAN IDs the world
	// already knows and do not wait for their own join.
	fleet bool
}

// provision takes a server from nothing to a joined Node with the calls the
// controller makes: the adoption list by pool tag, the create, reads until
// active, the VLANs, the ports, the installer and join configuration, the
// reinstall into the installer, and, once the Node has joined, the ports of
// the pool's network type.
func (w *costWorld) provision(ctx context.Context, s costServer) (*metal.Device, error) {
	if err := w.call("list devices by pool tag", func() error {
		_, err := w.client.ListDevices(ctx, metal.ListDevicesOptions{Tag: equinixv1.PoolTag(s.pool), Brief: true})
		return err
	}); err != nil {
		return nil, err
	}
	var dev *metal.Device
	if err := w.call("create device", func() (err error) {
		dev, err = w.client.CreateDevice(ctx, metal.CreateDeviceRequest{
			Hostname: s.name, Plan: s.tmpl.Plan, Metro: strings.ToLower(s.tmpl.Metro), BillingCycle: "hourly",
			OperatingSystem: "custom_ipxe", Userdata: redact.Sensitive(harvester.ShellScript()),
			Tags: []string{equinixv1.ClusterTag(clusterID), equinixv1.PoolTag(s.pool), s.instance},
		})
		return err
	}); err != nil {
		return nil, err
	}
	dev, err := w.active(ctx, dev.ID)
	if err != nil {
		return nil, err
	}
	vlans, err := w.metroVLANs(ctx, strings.ToLower(s.tmpl.Metro), network.VXLANs(s.tmpl), !s.fleet)
	if err != nil {
		return nil, err
	}
	if dev, err = w.ports(ctx, dev, s.tmpl, network.PhaseInstall, vlans); err != nil {
		return nil, err
	}
	if err := w.configure(ctx, dev, s); err != nil {
		return nil, err
	}
	script, err := harvester.InstallerScriptURL(w.ipxeURL, harvesterVersion, equinixv1.BootModeReinstall, s.tmpl.ManagementBondingOptions)
	if err != nil {
		return nil, err
	}
	if err := w.call("reinstall", func() error {
		return w.client.Reinstall(ctx, dev.ID, metal.ReinstallRequest{OperatingSystem: "custom_ipxe", IPXEScriptURL: script,
			PreserveData: true, DeprovisionFast: true})
	}); err != nil {
		return nil, err
	}
	if dev, err = w.active(ctx, dev.ID); err != nil {
		return nil, err
	}
	if s.fleet {
		return dev, nil
	}
	if err := w.joined(ctx, dev.ID); err != nil {
		return nil, err
	}
	return w.ports(ctx, dev, s.tmpl, network.PhaseJoined, vlans)
}

// remove is the controller's removal: the device by its instance tag, then
// the delete.
func (w *costWorld) remove(ctx context.Context, s costServer, id string) error {
	if err := w.call("list devices by instance tag", func() error {
		_, err := w.client.ListDevices(ctx, metal.ListDevicesOptions{Tag: s.instance})
		return err
	}); err != nil {
		return err
	}
	return w.call("delete device", func() error { return w.client.DeleteDevice(ctx, id, false) })
}

// active reads the device until it is active: with zero timings a step
// completes on the next access, so this is one or two reads.
func (w *costWorld) active(ctx context.Context, id string) (*metal.Device, error) {
	var dev *metal.Device
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := w.call("get device", func() (err error) {
			dev, err = w.client.GetDevice(ctx, id)
			return err
		})
		return err == nil && dev.State == metal.DeviceStateActive, err
	})
	return dev, err
}

// joined waits for the agent to register the device's Node and, while
// measuring, charges its time past the install to the agent.
func (w *costWorld) joined(ctx context.Context, id string) error {
	return wait.PollUntilContextTimeout(ctx, 2*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		r, ok := w.metal.agent.LastResult(id)
		if !ok {
			return false, nil
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		boot, booted := w.booted[id]
		if !booted || r.At.Before(boot) {
			return false, nil // the outcome of an earlier boot
		}
		if !r.OK {
			return false, fmt.Errorf("device %s did not join: %s", id, r.Reason)
		}
		if w.measured {
			w.joins += r.At.Sub(boot) - w.installTime
			w.joinCount++
		}
		return true, nil
	})
}

// metroVLANs lists the metro's VLANs (with list) for every server, as the
// controller's VLAN lookup does when its cache has expired, and creates
// what is missing once.
func (w *costWorld) metroVLANs(ctx context.Context, metro string, wanted []int, list bool) (map[int]string, error) {
	var existing []metal.VirtualNetwork
	if list {
		if err := w.call("list VLANs", func() (err error) {
			existing, err = w.client.ListVLANs(ctx, metro)
			return err
		}); err != nil {
			return nil, err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range existing {
		w.vlans[v.VXLAN] = v.ID
	}
	for _, vx := range wanted {
		if _, ok := w.vlans[vx]; ok {
			continue
		}
		created, err := w.client.CreateVLAN(ctx, metal.CreateVLANRequest{Metro: metro, VXLAN: vx, Description: "simcost"})
		if err != nil {
			return nil, fmt.Errorf("creating VLAN %d: %w", vx, err)
		}
		w.vlans[vx] = created.ID
	}
	out := make(map[int]string, len(w.vlans))
	for k, v := range w.vlans {
		out[k] = v
	}
	return out, nil
}

// ports converges the device's ports as the controller does, each call
// timed under its name.
func (w *costWorld) ports(ctx context.Context, dev *metal.Device, tmpl *equinixv1.InstanceTemplate, phase network.Phase, vlans map[int]string) (*metal.Device, error) {
	return convergePorts(dev, tmpl, phase, vlans,
		func(s network.Step) (answer *metal.Port, err error) {
			err = w.call(portOp(s.Op), func() (err error) {
				answer, err = s.Send(ctx, w.client)
				return err
			})
			return answer, err
		},
		func(id string) (dev *metal.Device, err error) {
			err = w.call("get device", func() (err error) {
				dev, err = w.client.GetDevice(ctx, id)
				return err
			})
			return dev, err
		})
}

func portOp(op network.Op) string {
	switch op {
	case network.OpAssign:
		return "port: assign VLAN"
	case network.OpUnassign:
		return "port: unassign VLAN"
	case network.OpBond:
		return "port: bond"
	case network.OpDisbond:
		return "port: disbond"
	default:
		return "port: convert"
	}
}

// configure puts the installer and the join configuration on the device.
func (w *costWorld) configure(ctx context.Context, dev *metal.Device, s costServer) error {
	iso, err := harvester.ISOURL(harvesterVersion, "")
	if err != nil {
		return err
	}
	vlan, err := harvester.ManagementVLANID(*s.tmpl)
	if err != nil {
		return err
	}
	cfg, err := harvester.RenderJoinConfig(harvester.JoinConfigInput{
		ServerURL: "https://" + vip + ":443", Token: joinToken, Hostname: s.name, PasswordHash: w.passwordHash,
		MACs: []string{dev.MACs()[s.tmpl.ManagementInterface[0]]}, BondOptions: s.tmpl.ManagementBondingOptions,
		VLANID: vlan, ISOURL: iso, InstallDevice: "/dev/sda",
	})
	if err != nil {
		return err
	}
	script, err := harvester.InstallerScriptURL(w.ipxeURL, harvesterVersion, equinixv1.BootModeReinstall, s.tmpl.ManagementBondingOptions)
	if err != nil {
		return err
	}
	userdata, never := redact.Sensitive(cfg), false
	return w.call("update device", func() error {
		_, err := w.client.UpdateDevice(ctx, dev.ID, metal.DeviceUpdate{IPXEScriptURL: &script, Userdata: &userdata, AlwaysPXE: &never})
		return err
	})
}
