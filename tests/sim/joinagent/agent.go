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
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
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
	// NetworkGrace is how long a joined server's management network may be
	// cut before its Node turns NotReady: the node lifecycle controller's
	// node-monitor-grace-period (40s by default), within which a kubelet
	// that cannot post its status goes unnoticed.
	NetworkGrace time.Duration
	// HTTPClient fetches iPXE scripts from loopback URLs.
	HTTPClient *http.Client
	// KubeletVersion is reported by the Nodes.
	KubeletVersion string
	// ProviderIDPrefix, when set, makes Nodes register with spec.providerID
	// <prefix><hostname>, as a kubelet told its provider ID does (RKE2's
	// with its built-in cloud controller registers as rke2://<hostname>).
	ProviderIDPrefix string
	// ExternalCloudProvider makes Nodes register as a kubelet run with
	// --cloud-provider=external does: tainted
	// node.cloudprovider.kubernetes.io/uninitialized and with no addresses,
	// which a cloud controller sets.
	ExternalCloudProvider bool
	Log                   logrus.FieldLogger
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
	// Files are what the install configuration has the OS write at every
	// boot (os.write_files).
	Files []File
	At    time.Time
}

// Agent is the join agent.
type Agent struct {
	sim    *metalsim.Simulator
	opts   Options
	writes *queue

	mu         sync.Mutex
	maintained map[string]time.Time
	results    []Result
	// lastResult is each device's latest outcome, so that waiting for one
	// server does not copy every result of a large fleet.
	lastResult map[string]Result
	nodes      map[string]*nodeState  // by node name
	byDevice   map[string]string      // device ID -> node name
	pending    map[string]*installJob // by device ID
	ctx        context.Context
	// maintenanceWritten sees every Node the maintenance emulation wrote.
	maintenanceWritten func(*corev1.Node)
}

type nodeState struct {
	deviceID string
	// heartbeat is whether the server's kubelet runs: false once the server
	// stopped, until it boots from disk again.
	heartbeat bool
	mgmtMACs  []string
	vlan      int
	// network is the server's latest port state.
	network metalsim.NetworkState
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
	if opts.NetworkGrace <= 0 {
		opts.NetworkGrace = 40 * time.Second
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
		lastResult: map[string]Result{},
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

// LastResult is the latest install outcome of a device.
func (a *Agent) LastResult(deviceID string) (Result, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.lastResult[deviceID]
	return r, ok
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
		a.nodes[name].network = n.Network
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
	a.lastResult[r.DeviceID] = r
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
