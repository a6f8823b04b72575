package joinagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// The install path: the iPXE script a boot ran, the configuration the
// installer would read, the checks a real install fails on, and the wait
// until the Node registers.

func isHarvesterInstaller(b bootResult) bool {
	return strings.Contains(b.Kernel, "harvester") && slices.Contains(b.Args, "harvester.install.automatic=true")
}

// script returns the iPXE script a boot ran: the userdata, or the URL's body
// when it is an http URL on loopback (the only place a simulated server can
// reach).
func (a *Agent) script(b *metalsim.Boot) (string, error) {
	if b.ScriptFromUserdata {
		return b.IPXEScript, nil
	}
	if b.IPXEScriptURL == "" {
		return "", fmt.Errorf("no ipxe_script_url and no #!ipxe userdata")
	}
	u, err := url.Parse(b.IPXEScriptURL)
	if err != nil {
		return "", err
	}
	ip := net.ParseIP(u.Hostname())
	if u.Scheme != "http" || (u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback())) {
		return "", fmt.Errorf("%s is not reachable from the simulated network (only http on loopback is)", b.IPXEScriptURL)
	}
	resp, err := a.opts.HTTPClient.Get(b.IPXEScriptURL)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s answered %s", b.IPXEScriptURL, resp.Status)
	}
	return string(body), nil
}

// ipxeVars are what iPXE knows after dhcp: the NIC that answered (net0, the
// first port on the management bond) and each NIC's MAC.
func ipxeVars(ns metalsim.NetworkState) map[string]string {
	vars := map[string]string{"ifname": "net0"}
	for name, mac := range ns.MACs {
		if strings.HasPrefix(name, "eth") {
			vars["net"+strings.TrimPrefix(name, "eth")+"/mac"] = mac
		}
	}
	return vars
}

func (a *Agent) installConfig(n metalsim.Notification, boot bootResult) (Install, error) {
	cfg := cmdlineConfig(boot.Args)
	if getString(cfg, "install.configurl") != "" {
		// The metadata service answers only servers with layer-3 addresses.
		if strings.HasPrefix(n.Network.Type, "layer2") {
			return Install{}, fmt.Errorf("cannot fetch config_url: the metadata service is unreachable in %s mode", n.Network.Type)
		}
		ud, err := userdataConfig(n.Userdata)
		if err != nil {
			return Install{}, err
		}
		merge(cfg, ud)
	}
	ic, err := validate(cfg, a.opts.Expect, n.Network.MACs)
	if err != nil {
		// Messages name no token, but a token can sit anywhere in a
		// malformed document; the one the server presented is masked too.
		return ic, errors.New(redact(err.Error(), getString(cfg, "token")))
	}
	if err := reachable(n.Network, ic.MACs, ic.VLANID); err != nil {
		return ic, err
	}
	return ic, nil
}

// reachable checks that the management network can work on the ports as they
// are: untagged needs layer-3 addresses on the management NICs' bond; a VLAN
// needs that VLAN on the port (or bond) the management NICs use.
func reachable(ns metalsim.NetworkState, macs []string, vlan int) error {
	byMAC := map[string]metalsim.PortState{}
	ports := map[string]metalsim.PortState{}
	for _, p := range ns.Ports {
		ports[p.Name] = p
		if p.MAC != "" {
			byMAC[strings.ToLower(p.MAC)] = p
		}
	}
	for _, mac := range macs {
		p, ok := byMAC[mac]
		if !ok {
			return fmt.Errorf("NIC %s is gone", mac)
		}
		carrier := p
		if p.Bonded && p.Bond != "" {
			carrier = ports[p.Bond]
		}
		if vlan == 0 {
			if carrier.Layer2 || (!p.Bonded && p.Bond != "") || !hasLayer3(ns) {
				return fmt.Errorf("management NIC %s has no layer-3 network (port %s), and no management VLAN is configured", p.Name, carrier.Name)
			}
			continue
		}
		if !containsVLAN(carrier.VLANs, vlan) {
			return fmt.Errorf("management VLAN %d is not on port %s, which carries management NIC %s", vlan, carrier.Name, p.Name)
		}
	}
	return nil
}

func hasLayer3(ns metalsim.NetworkState) bool {
	for _, a := range ns.Addresses {
		if a.Management && a.Family == 4 {
			return true
		}
	}
	return false
}

func containsVLAN(vlans []int32, v int) bool {
	for _, x := range vlans {
		if int(x) == v {
			return true
		}
	}
	return false
}

func (a *Agent) scheduleJoin(n metalsim.Notification, ic Install) {
	a.mu.Lock()
	parent := a.ctx
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	if prev, ok := a.pending[n.DeviceID]; ok {
		prev.cancel()
	}
	job := &installJob{cancel: cancel}
	a.pending[n.DeviceID] = job
	a.mu.Unlock()
	a.event(n.DeviceID, "harvester.install.started", fmt.Sprintf("installing Harvester from %s as %s", ic.ISOURL, ic.Hostname))
	go func() {
		t := time.NewTimer(a.opts.InstallTime)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a.writes.push(func(context.Context) { a.finishInstall(ctx, job, n, ic) })
	}()
}

// finishInstall registers the Node unless the install was cancelled or
// superseded while it waited.
func (a *Agent) finishInstall(ctx context.Context, job *installJob, n metalsim.Notification, ic Install) {
	if !a.takePending(n.DeviceID, job) || ctx.Err() != nil {
		return
	}
	defer job.cancel()
	if err := a.register(ctx, n, ic); err != nil {
		if ctx.Err() != nil {
			return
		}
		a.fail(n.DeviceID, ic.Hostname, "node registration failed: "+err.Error())
		return
	}
	a.record(Result{DeviceID: n.DeviceID, Hostname: ic.Hostname, OK: true, MACs: ic.MACs, VLANID: ic.VLANID, Files: ic.Files})
	a.opts.Log.Infof("device %s (%s): node %s joined the cluster", n.DeviceID, n.Hostname, ic.Hostname)
	a.event(n.DeviceID, "harvester.install.succeeded", "node "+ic.Hostname+" joined the cluster")
}

func (a *Agent) takePending(deviceID string, job *installJob) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pending[deviceID] != job {
		return false
	}
	delete(a.pending, deviceID)
	return true
}

func (a *Agent) cancelPending(deviceID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if job, ok := a.pending[deviceID]; ok {
		job.cancel()
		delete(a.pending, deviceID)
	}
}
