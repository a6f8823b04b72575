// Package joinagent plays the servers' side of a Harvester install against the
// Metal simulator and a real kube-apiserver. When a device boots a Harvester
// installer (its iPXE script, run by a small iPXE interpreter, plus the join
// configuration from its userdata), the agent checks the configuration the way
// a real install fails — server URL, token, management NIC MACs, VLAN and
// network reachability — and on success registers a Node named after
// os.hostname and keeps its heartbeat fresh. On failure no Node appears and a
// device event (harvester.install.failed) says why, without any token.
//
// Afterwards the Node follows its device: reinstalling, powering off, a
// reboot or rescue going down, deprovisioning (a delete or a reclaim) and
// deletion stop the kubelet (Ready=Unknown, no more heartbeats, as the node
// lifecycle controller marks a node whose kubelet went quiet); booting from
// disk after a power on or reboot starts it again (Ready=True). Tests drive the Ready condition directly with
// SetNodeNotReady, SetNodeReady, ServerDown and DeleteNode. Node writes caused
// by notifications run in notification order on the agent's own goroutine,
// so the Metal API never waits on the apiserver.
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
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester/harvester-equinix-addon/pkg/simulator/metalsim"
)

// Expect is what a joining server must present.
type Expect struct {
	// ServerURL is the join URL in the installer's form: https://host:443.
	ServerURL string
	Token     string
}

// Options configure the agent.
type Options struct {
	Kube   kubernetes.Interface
	Expect Expect
	// InstallTime is how long an install takes before the Node registers.
	InstallTime time.Duration
	// HeartbeatInterval is how often Ready nodes refresh lastHeartbeatTime.
	HeartbeatInterval time.Duration
	// HTTPClient fetches iPXE scripts from loopback URLs.
	HTTPClient *http.Client
	// KubeletVersion is reported by the Nodes.
	KubeletVersion string
	Log            logrus.FieldLogger
}

// Result is the outcome of one install, for tests.
type Result struct {
	DeviceID string
	Hostname string
	OK       bool
	// Reason says why the install failed; it never contains secrets.
	Reason string
	MACs   []string
	VLANID int
	At     time.Time
}

// Agent is the join agent.
type Agent struct {
	sim    *metalsim.Simulator
	opts   Options
	writes *queue

	mu         sync.Mutex
	maintained map[string]time.Time
	results    []Result
	nodes      map[string]*nodeState  // by node name
	byDevice   map[string]string      // device ID -> node name
	pending    map[string]*installJob // by device ID
	ctx        context.Context
}

type nodeState struct {
	deviceID string
	// heartbeat is whether the server's kubelet runs: false once the server
	// stopped, until it boots from disk again.
	heartbeat bool
	mgmtMACs  []string
	vlan      int
}

// installJob is one install in progress; a newer boot or a stop cancels it.
type installJob struct {
	cancel context.CancelFunc
}

// New builds an agent; Start connects it to the simulator.
func New(sim *metalsim.Simulator, opts Options) *Agent {
	if opts.InstallTime <= 0 {
		opts.InstallTime = time.Second
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = 10 * time.Second
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.KubeletVersion == "" {
		opts.KubeletVersion = "v1.34.10+rke2r1"
	}
	if opts.Log == nil {
		opts.Log = logrus.WithField("component", "join-agent")
	}
	return &Agent{
		sim: sim, opts: opts, writes: newQueue(),
		nodes: map[string]*nodeState{}, byDevice: map[string]string{}, pending: map[string]*installJob{},
	}
}

// Start subscribes to the simulator and keeps heartbeats until ctx ends.
func (a *Agent) Start(ctx context.Context) {
	a.mu.Lock()
	a.ctx = ctx
	a.mu.Unlock()
	unsubscribe := a.sim.Subscribe(a.notify)
	go a.writes.run(ctx)
	go func() {
		t := time.NewTicker(a.opts.HeartbeatInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				unsubscribe()
				return
			case <-t.C:
				a.heartbeat(ctx)
			}
		}
	}()
}

// Results returns every install outcome so far.
func (a *Agent) Results() []Result {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Result(nil), a.results...)
}

func (a *Agent) notify(n metalsim.Notification) {
	switch n.Type {
	case metalsim.DeviceBooted:
		a.booted(n)
	case metalsim.DeviceDeleted:
		a.cancelPending(n.DeviceID)
		a.stopped(n.DeviceID, "the server was deleted", true)
	case metalsim.DevicePoweredOff:
		a.stopped(n.DeviceID, "the server is powered off", false)
	case metalsim.DeviceRebooting:
		// The host goes down; its boot (DeviceBooted) starts the kubelet
		// again, or runs the installer with always_pxe.
		a.cancelPending(n.DeviceID)
		a.stopped(n.DeviceID, "the server is rebooting", false)
	case metalsim.DeviceNetworkChanged:
		a.writes.push(func(ctx context.Context) { a.networkChanged(ctx, n) })
	case metalsim.DeviceStateChanged:
		switch n.State {
		case metalv1.DEVICESTATE_POWERING_OFF:
			a.cancelPending(n.DeviceID)
		case metalv1.DEVICESTATE_REINSTALLING:
			a.cancelPending(n.DeviceID)
			a.stopped(n.DeviceID, "the server is reinstalling", false)
		case metalv1.DEVICESTATE_DEPROVISIONING:
			a.cancelPending(n.DeviceID)
			a.stopped(n.DeviceID, "the server is deprovisioning", true)
		}
	}
}

func (a *Agent) booted(n metalsim.Notification) {
	if n.Boot == nil {
		return
	}
	if !n.Boot.PXE {
		a.bootedFromDisk(n)
		return
	}
	script, err := a.script(n.Boot)
	if err != nil {
		a.fail(n.DeviceID, n.Hostname, fmt.Sprintf("iPXE could not load its script: %v", err))
		return
	}
	boot, err := runIPXE(script, ipxeVars(n.Network))
	if err != nil {
		a.fail(n.DeviceID, n.Hostname, fmt.Sprintf("iPXE script failed: %v", err))
		return
	}
	if boot.Shell || !isHarvesterInstaller(boot) {
		// The seed's first phase: the server waits in the iPXE shell.
		a.event(n.DeviceID, "ipxe.shell", "the iPXE script ended in the shell; waiting for a reinstall")
		return
	}
	ic, err := a.installConfig(n, boot)
	if err != nil {
		a.fail(n.DeviceID, n.Hostname, "Harvester install failed: "+err.Error())
		return
	}
	a.scheduleJoin(n, ic)
}

// bootedFromDisk handles a boot that skipped iPXE: an installed server that
// is powered on or rebooted starts its kubelet again, so a Node whose server
// had stopped reports Ready again. The rescue OS runs no kubelet, and a
// reinstall with a regular OS has wiped Harvester.
func (a *Agent) bootedFromDisk(n metalsim.Notification) {
	switch n.Boot.Reason {
	case metalsim.BootRescue:
		a.stopped(n.DeviceID, "the server booted into rescue mode", false)
		return
	case metalsim.BootReinstall:
		a.stopped(n.DeviceID, "the server was reinstalled with "+n.Boot.OperatingSystem, true)
		return
	case metalsim.BootPowerOn, metalsim.BootReboot:
	default:
		return
	}
	a.mu.Lock()
	name, ok := a.byDevice[n.DeviceID]
	var st nodeState
	if ok && !a.nodes[name].heartbeat {
		a.nodes[name].heartbeat = true
		st = *a.nodes[name]
	}
	a.mu.Unlock()
	if !ok || !st.heartbeat {
		return
	}
	a.writes.push(func(ctx context.Context) {
		change := readyChange(corev1.ConditionTrue, reasonReady, messageReady)
		if err := reachable(n.Network, st.mgmtMACs, st.vlan); err != nil {
			change = readyChange(corev1.ConditionFalse, reasonNetwork, "management network lost: "+err.Error())
		}
		if err := a.updateReady(ctx, name, change.at(time.Now(), false)); err != nil {
			a.opts.Log.Debugf("node %s: %v", name, err)
		}
	})
}

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

func (a *Agent) installConfig(n metalsim.Notification, boot bootResult) (installConfig, error) {
	cfg := cmdlineConfig(boot.Args)
	if getString(cfg, "install.configurl") != "" {
		// The metadata service answers only servers with layer-3 addresses.
		if strings.HasPrefix(n.Network.Type, "layer2") {
			return installConfig{}, fmt.Errorf("cannot fetch config_url: the metadata service is unreachable in %s mode", n.Network.Type)
		}
		ud, err := userdataConfig(n.Userdata)
		if err != nil {
			return installConfig{}, err
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

func (a *Agent) scheduleJoin(n metalsim.Notification, ic installConfig) {
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
func (a *Agent) finishInstall(ctx context.Context, job *installJob, n metalsim.Notification, ic installConfig) {
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
	a.record(Result{DeviceID: n.DeviceID, Hostname: ic.Hostname, OK: true, MACs: ic.MACs, VLANID: ic.VLANID})
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

func (a *Agent) fail(deviceID, hostname, reason string) {
	reason = redact(reason, a.opts.Expect.Token)
	a.opts.Log.Infof("device %s (%s): %s", deviceID, hostname, reason)
	a.record(Result{DeviceID: deviceID, Hostname: hostname, Reason: reason})
	a.event(deviceID, "harvester.install.failed", reason)
}

// redact masks secrets in text that goes to logs and device events.
func redact(text string, secrets ...string) string {
	for _, s := range secrets {
		if s != "" {
			text = strings.ReplaceAll(text, s, "<redacted>")
		}
	}
	return text
}

func (a *Agent) record(r Result) {
	r.At = time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.results = append(a.results, r)
}

func (a *Agent) event(deviceID, typ, body string) {
	if err := a.sim.AddDeviceEvent(deviceID, typ, body); err != nil {
		a.opts.Log.Debugf("device %s: recording event %s: %v", deviceID, typ, err)
	}
}

// NodeNames lists the nodes the agent registered and still runs.
func (a *Agent) NodeNames() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.nodes))
	for n := range a.nodes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
