// Package ownedfleet plays servers people own, each behind a simulated
// BMC (the Redfish responder of package bmcsim, or OpenIPMI's ipmi_sim
// through package ipmisim), as the join agent plays Metal devices.
//
// A server follows its BMC's power transitions. A start (or restart)
// with a one-time network boot set is a PXE boot chained by the site's
// DHCP server to the addon's boot endpoint: the server asks the chain
// URL exactly as iPXE does (its MAC and SMBIOS UUID filled in), runs
// the script it is given with the project's iPXE interpreter, fetches
// the configuration the installer would from the script's config_url,
// and checks what a real install would fail on, plus what a server of
// one's own must get: its own management MAC, its install disk, the
// cluster's version, its architecture, join mode. A start from the
// virtual CD or by the firmware's HTTP boot reads the boot image the BMC
// was given as the BMC would, and asks the chain URL its iPXE script
// holds instead: no DHCP, no PXE. A good install
// registers the Node named by os.hostname, with the configuration's
// labels (the Instance's among them), after Options.InstallTime, and
// keeps its heartbeat. Power off stops the kubelet (Ready=Unknown); a
// start from disk brings an installed server's kubelet back. A refused
// chain (404) boots the disk, as iPXE falls back to the next device.
//
// Every boot's outcome is recorded (Results, LastResult), with the
// requests the server made and never a nonce or token.
package ownedfleet

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/joinagent"
)

// Options configure the fleet.
type Options struct {
	Kube kubernetes.Interface
	// Expect is the cluster a server must be told to join.
	Expect joinagent.Expect
	// Version is the cluster's Harvester version, which an install must be.
	Version string
	// Endpoint is the boot endpoint's base URL, as the DHCP server's
	// chain names it (http://host:port).
	Endpoint string
	// InstallTime is how long an install takes before the Node registers.
	InstallTime time.Duration
	// HeartbeatInterval is how often running kubelets refresh their Node.
	HeartbeatInterval time.Duration
	HTTPClient        *http.Client
	KubeletVersion    string
	Log               logrus.FieldLogger
}

// Spec is one server, as its Inventory describes it.
type Spec struct {
	// Name is the Inventory's.
	Name string
	// MAC is the management NIC's (the one that PXE boots).
	MAC string
	// UUID is the SMBIOS UUID iPXE reports; "" for none.
	UUID string
	// Arch is "amd64" (or "") or "arm64".
	Arch string
	// Disk is the install disk the server must be given (the Inventory's
	// primaryDisk).
	Disk string
}

// PowerSource is a BMC whose power transitions a server follows:
// *bmcsim.BMC and *ipmisim.Sim.
type PowerSource interface {
	OnPowerTransition(func(bmcsim.PowerTransition))
}

// Result is the outcome of one network boot.
type Result struct {
	Server   string
	Hostname string
	OK       bool
	// Reason says why the boot or install failed; never a secret.
	Reason string
	// Requests are the URLs the server asked for, a nonce shown as
	// <nonce>, and each answer's status.
	Requests []string
	Device   string
	ISOURL   string
	// Network is how the installed node's management address is set
	// (the configuration's method, ip, subnet mask, gateway, name
	// servers); LiveNetwork the installer's live system's (the kernel's
	// ip= and nameserver= arguments).
	Network     Network
	LiveNetwork []string
	At          time.Time
}

// Network is a management interface's addressing.
type Network struct {
	Method, IP, SubnetMask, Gateway string
	DNS                             []string
}

// Fleet is the simulated servers.
type Fleet struct {
	opts Options

	mu      sync.Mutex
	ctx     context.Context
	servers map[string]*server
	results []Result
	last    map[string]Result
}

// ErrNotStarted is returned by Add before Start.
var ErrNotStarted = errors.New("the fleet is not started")

// New builds a fleet; Start runs it.
func New(opts Options) *Fleet {
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
		opts.Log = logrus.WithField("component", "owned-fleet")
	}
	return &Fleet{opts: opts, servers: map[string]*server{}, last: map[string]Result{}}
}

// Start keeps the heartbeats until ctx ends; servers run until then too.
func (f *Fleet) Start(ctx context.Context) {
	f.mu.Lock()
	f.ctx = ctx
	f.mu.Unlock()
	go func() {
		t := time.NewTicker(f.opts.HeartbeatInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				f.each(func(s *server) { s.push(s.heartbeat) })
			}
		}
	}()
}

// Add makes spec a server that follows power.
func (f *Fleet) Add(spec Spec, power PowerSource) error { return f.add(spec, power, false) }

func (f *Fleet) add(spec Spec, power PowerSource, host bool) error {
	f.mu.Lock()
	ctx := f.ctx
	if ctx == nil {
		f.mu.Unlock()
		return ErrNotStarted
	}
	s := newServer(ctx, f, spec)
	s.host = host
	f.servers[spec.Name] = s
	f.mu.Unlock()
	power.OnPowerTransition(s.transition)
	return nil
}

func (f *Fleet) each(fn func(*server)) {
	f.mu.Lock()
	all := make([]*server, 0, len(f.servers))
	for _, s := range f.servers {
		all = append(all, s)
	}
	f.mu.Unlock()
	for _, s := range all {
		fn(s)
	}
}

func (f *Fleet) record(r Result) {
	r.At = time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.results = append(f.results, r)
	f.last[r.Server] = r
}

// Results returns every boot's outcome so far.
func (f *Fleet) Results() []Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Result(nil), f.results...)
}

// LastResult is the latest outcome of a server's network boot.
func (f *Fleet) LastResult(server string) (Result, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.last[server]
	return r, ok
}

// NodeNames lists the Nodes of installed servers whose kubelet runs.
func (f *Fleet) NodeNames() []string {
	var names []string
	f.each(func(s *server) {
		if name, running := s.node(); running {
			names = append(names, name)
		}
	})
	sort.Strings(names)
	return names
}
