package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/joinagent"
	"github.com/harvester/harvester-equinix-addon/tests/sim/ownedfleet"
	"github.com/harvester/harvester-equinix-addon/tests/vmrig"
)

// mirrorPath is where the machines find the artifacts mirror, beside the
// boot endpoint on the one address their network reaches.
const mirrorPath = "/harvester"

// ownedVMDemo is the owned-server demo on real firmware: each server is a
// QEMU machine (tests/vmrig) whose power and boot device are in the hands
// of a real IPMI BMC, OpenIPMI's ipmi_sim, which the controller drives as
// it would a server's. Powered on with a one-time PXE boot, the machine's
// own iPXE ROM gets the chain URL from DHCP (QEMU's, standing in for the
// site's), asks the boot endpoint for it, fetches the installer's kernel
// and initrd and starts the kernel with the configuration URL. The kernel
// is a stand-in that prints its command line and halts, for Harvester's
// would take the emulated machine far longer than a demo's minutes; from
// that command line the demo plays the
// installer as the tests do: it fetches the configuration the machine was
// told to, checks it and registers the Node (tests/sim/ownedfleet).
func ownedVMDemo(ctx context.Context, d *demoRun) error {
	return d.runOwned(ctx, ownedBoot{publicURL: vmrig.GuestURL, mirror: vmrig.GuestURL + mirrorPath}, d.startVMRack)
}

// vmRackNeeds says what the QEMU rack cannot run without, before the
// environment starts.
func vmRackNeeds() error { return vmrig.Available(vmrig.FirmwareUEFI) }

// vmRack is the servers as QEMU machines behind ipmi_sim, and what
// follows their boots.
type vmRack struct {
	machines []*vmrig.Machine
	// installers is the installers' way to the machines' network (the
	// demo plays them, in this process).
	installers *http.Server
	stop       context.CancelFunc
	wg         sync.WaitGroup

	mu       sync.Mutex
	failures []string
}

// startVMRack starts the three machines, switched off, each behind its
// ipmi_sim; their network reaches the boot endpoint at ipxeAddr and the
// artifacts mirror, at vmrig.GuestURL, and nothing else.
func (d *demoRun) startVMRack(ctx context.Context, ipxeAddr string) (*ownedfleet.Fleet, ownedRack, error) {
	say("starting three QEMU machines, switched off, each behind its own ipmi_sim (a real IPMI BMC); powered on with a one-time PXE boot, one boots its iPXE ROM into the boot endpoint, and the demo plays its installer (%s) from the kernel it started", d.installTime)
	guest, err := guestNetwork(ipxeAddr)
	if err != nil {
		return nil, nil, err
	}
	ctx, stop := context.WithCancel(ctx)
	rack := &vmRack{stop: stop}
	client, err := rack.serveInstallers(guest)
	if err != nil {
		rack.close()
		return nil, nil, err
	}
	fleet, err := d.ownedFleet(ctx, ipxeAddr, client)
	if err != nil {
		rack.close()
		return nil, nil, err
	}
	for _, spec := range ownedServers {
		// Each machine's folder (its serial console, its BMC's state) is
		// this run's alone: an earlier run's console would read as a boot.
		dir := filepath.Join(d.dir, "servers", spec.Name)
		if err := os.RemoveAll(dir); err != nil {
			rack.close()
			return nil, nil, err
		}
		m, err := vmrig.Start(vmrig.Options{MAC: spec.MAC, UUID: spec.UUID, Handler: guest,
			BootFile: bootendpoint.ChainPath + bootendpoint.ChainQuery,
			Username: ownedBMCUser, Password: ownedBMCPassword, Dir: dir,
			// UEFI, as most servers sold today boot (many only it), and
			// what the pool asks an IPMI BMC for, which cannot say.
			Firmware: vmrig.FirmwareUEFI})
		if err != nil {
			rack.close()
			return nil, nil, fmt.Errorf("server %s: %w", spec.Name, err)
		}
		rack.machines = append(rack.machines, m)
		if err := fleet.AddHost(spec, m.BMC); err != nil {
			rack.close()
			return nil, nil, err
		}
		rack.wg.Add(1)
		go func() {
			defer rack.wg.Done()
			rack.follow(ctx, fleet, spec.Name, m)
		}()
		fmt.Fprintf(os.Stderr, "    %s: BMC ipmi_sim at %s:%d (UDP), NIC %s, disk %s, %s; serial console %s\n", spec.Name,
			m.Endpoint.Host, m.Endpoint.Port, spec.MAC, spec.Disk, rack.power(len(rack.machines)-1), filepath.Join(m.Dir, "serial.log"))
	}
	return fleet, rack, nil
}

// guestNetwork is what the machines reach at vmrig.GuestURL: the boot
// endpoint (the controller's, at ipxeAddr) and the artifacts mirror.
func guestNetwork(ipxeAddr string) (http.Handler, error) {
	endpoint, err := url.Parse("http://" + ipxeAddr)
	if err != nil {
		return nil, err
	}
	mirror, err := vmrig.ArtifactsMirror(mirrorPath, harvesterVersion)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/boot/", httputil.NewSingleHostReverseProxy(endpoint))
	mux.Handle(mirrorPath+"/", mirror)
	return mux, nil
}

// serveInstallers serves guest on a loopback port and returns a client
// that reaches it at vmrig.GuestURL's address: the installers the demo
// plays ask for their configuration at the URL the machine's kernel was
// given, as the real installer on the machine would.
func (r *vmRack) serveInstallers(guest http.Handler) (*http.Client, error) {
	gu, err := url.Parse(vmrig.GuestURL)
	if err != nil {
		return nil, err
	}
	guestAddr := net.JoinHostPort(gu.Hostname(), cmp.Or(gu.Port(), "80"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the installers: %w", err)
	}
	r.installers = &http.Server{Handler: guest, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = r.installers.Serve(ln) }()
	var dialer net.Dialer
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr == guestAddr {
				addr = ln.Addr().String()
			}
			return dialer.DialContext(ctx, network, addr)
		},
	}}, nil
}

// follow hands the fleet each installer the machine's iPXE started: the
// kernel it fetched, the command line the kernel printed on the serial
// console and what the machine asked for since the last one. A network
// boot that ends where the firmware goes when nothing booted is a
// failure.
func (r *vmRack) follow(ctx context.Context, fleet *ownedfleet.Fleet, name string, m *vmrig.Machine) {
	tick := time.NewTicker(ownedWatchEvery)
	defer tick.Stop()
	seen, asked := 0, 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		serial := m.Serial()
		fresh := serial[min(seen, len(serial)):]
		cmdline, booted := vmrig.KernelCommandLine(fresh)
		stuck := nothingBooted(fresh) && lastStartNetwork(m)
		if !booted && !stuck {
			continue
		}
		seen = len(serial)
		reqs := m.Requests()
		boot := joinagent.Boot{Args: strings.Fields(cmdline)}
		var shown []string
		for _, req := range reqs[asked:] {
			u := vmrig.GuestURL + req.URL()
			switch {
			case strings.Contains(req.Path, "-vmlinuz-"):
				boot.Kernel = u
			case strings.Contains(req.Path, "-initrd-"):
				boot.Initrd = append(boot.Initrd, u)
			}
			shown = append(shown, fmt.Sprintf("%s %d", ownedfleet.Shown(u), req.Status))
		}
		asked = len(reqs)
		if !booted {
			r.mu.Lock()
			r.failures = append(r.failures, fmt.Sprintf("%s: its network boot found nothing to boot; it asked for: %s", name, strings.Join(shown, ", ")))
			r.mu.Unlock()
			continue
		}
		_ = fleet.Install(name, boot, shown)
	}
}

// nothingBooted says whether serial output shows the firmware out of boot
// options: SeaBIOS's last words, or OVMF starting its built-in shell.
func nothingBooted(serial string) bool {
	return strings.Contains(serial, "No bootable device") || strings.Contains(serial, "UEFI Interactive Shell")
}

// lastStartNetwork says whether the machine's BMC last started it with a
// one-time network boot.
func lastStartNetwork(m *vmrig.Machine) bool {
	ts := m.BMC.PowerTransitions()
	return len(ts) > 0 && ts[len(ts)-1].NetworkBoot()
}

func (r *vmRack) failure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.failures) == 0 {
		return nil
	}
	return errors.New(strings.Join(r.failures, "; "))
}

// inventories are examples/owned-servers.yaml's IPMI Inventories.
func (r *vmRack) inventories() (apply, shown string) {
	var file strings.Builder
	for i, m := range r.machines {
		file.WriteString(ownedInventory(ownedServers[i], "", fmt.Sprintf(ipmiConnection, m.Endpoint.Host, m.Endpoint.Port)))
	}
	return file.String(), file.String()
}

// ipmiConnection is an IPMI BMC's connection: %[1]s and %[2]d ipmi_sim's
// address.
const ipmiConnection = `      host: %[1]s
      port: 623                                  # IPMI over LAN
      insecureTLS: false
      providerOptions: {ipmitool: {port: %[2]d}}  # ipmi_sim's own UDP port, on loopback
      # A power off waits for QEMU to end, which an emulated machine on a
      # busy host takes seconds to.
      timeout: 30s
`

// off: the BMC has the power off and QEMU has ended.
func (r *vmRack) off(i int) bool {
	on, err := r.machines[i].BMC.PowerOn()
	return err == nil && !on && r.machines[i].HostPID() == 0
}

func (r *vmRack) power(i int) string {
	m := r.machines[i]
	on, err := m.BMC.PowerOn()
	switch {
	case err != nil:
		return "power unknown: " + err.Error()
	case on:
		return fmt.Sprintf("power on (QEMU pid %d)", m.HostPID())
	case m.HostPID() != 0:
		return "power off, QEMU still ending"
	}
	return "power off (no QEMU runs)"
}

func (r *vmRack) transitions(i int) []bmcsim.PowerTransition {
	return r.machines[i].BMC.PowerTransitions()
}

// close stops the followers, the machines and their BMCs, and the
// installers' way in.
func (r *vmRack) close() {
	r.stop()
	r.wg.Wait()
	for _, m := range r.machines {
		_ = m.Close()
	}
	if r.installers != nil {
		_ = r.installers.Close()
	}
}
