package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/joinagent"
	"github.com/harvester/harvester-equinix-addon/tests/sim/ownedfleet"
)

// The owned world of a run: servers people own, each a BMC (the project's
// Redfish responder, or for one to three of them chosen by the seed
// OpenIPMI's ipmi_sim behind a relay) and an Inventory, played by the owned
// fleet (they follow their BMC's power and boot override, PXE-boot into the
// hardware controller's boot endpoint and join as the configuration they
// are served says). One or two of them are foreign, a node of the cluster
// already runs on them (a Node of the Inventory's name) though the pools'
// selectors match them; two stray MACs, in no Inventory, keep asking the
// endpoint for a script and a configuration, with URLs stolen from claimed
// servers and guessed ones.
// The owned plan, drawn from the seed apart from the main plan, makes and
// deletes one or two pools on overlapping selectors, scales them, rolls
// them out under maxSurge and maxUnavailable (the selector changes), makes
// BMCs refuse, fail or answer too late (an IPMI BMC answers slowly or too
// late: its relay holds the answers back), and breaks and repairs installs.
// The main plan's kills and restarts hit the hardware controller that runs
// the pools.
const (
	ownedServers    = 8
	ownedStepsMin   = 10
	ownedStepsMore  = 8
	ownedInstall    = 300 * time.Millisecond
	ownedSecrets    = "chaos-owned"
	ownedLabel      = "chaos.harvesterhci.io/owned"
	ownedGenLabel   = "chaos.harvesterhci.io/gen"
	ownedGoodDisk   = "/dev/nvme0n1"
	ownedBrokenDisk = "/dev/sdz"
	// ownedStartupTimeout is the pools' remediation.startupTimeout: well
	// above a healthy server's network boot to join (about a second here),
	// short enough that a broken server fails, and is set aside after
	// ownedQuarantineAfter failures, within the run's chaos.
	ownedStartupTimeout  = 5 * time.Second
	ownedQuarantineAfter = 1
	// The first pool's servers take static addresses from an AddressPool
	// of this network (the second's from DHCP): more addresses than
	// servers, so that none waits for one.
	ownedAddressCIDR    = "10.99.0.0/24"
	ownedAddressGateway = "10.99.0.1"
	ownedNameserver     = "10.99.0.2"
)

type ownedKind string

const (
	ownCreate  ownedKind = "create-pool"
	ownScale   ownedKind = "scale"
	ownRollout ownedKind = "rollout"
	ownDelete  ownedKind = "delete-pool"
	ownRefuse  ownedKind = "bmc-refuse"
	ownFail    ownedKind = "bmc-fail"
	ownLost    ownedKind = "bmc-lost-answer"
	ownBreak   ownedKind = "break-install"
	ownRepair  ownedKind = "repair-install"
)

var ownedKinds = []ownedKind{ownCreate, ownCreate, ownCreate, ownScale, ownScale, ownScale, ownRollout, ownRollout, ownRollout,
	ownDelete, ownRefuse, ownFail, ownLost, ownLost, ownBreak, ownRepair}

type ownedStep struct {
	Delay time.Duration
	Kind  ownedKind
	Pick  int
}

// ownedPlan is the owned world's part of a run.
type ownedPlan struct {
	// Pools are the names the plan may make (two on overlapping selectors
	// in seeds where Overlap).
	Pools   []string
	Foreign int
	Steps   []ownedStep
	// IPMI are the indexes of the servers whose BMC is ipmi_sim.
	IPMI []int
	// Media are the indexes of the servers whose BMC offers virtual
	// media, HTTPBoot the one whose BMC offers UEFI HTTP boot instead
	// (-1 for none): see drawMedia.
	Media    []int
	HTTPBoot int
	// Broken are the indexes of the servers whose install fails from the
	// start (until a repair step picks one): a pool that claims one
	// replaces it after the startup timeout and it is quarantined, which
	// no claim may then take.
	Broken []int
	// SetAside is the index of the server a person quarantined by hand
	// before the run, the first free one by name after the IPMI server
	// every pool drives first, so the first a pool would claim if it did
	// not honour the label (a server quarantined after failing is tried
	// last anyway, fewest failures first). A repair step clears it.
	SetAside int
}

func newOwnedPlan(seed int64) ownedPlan {
	rng := rand.New(rand.NewSource(seed*6007 + 29))
	p := ownedPlan{Pools: []string{ownedPrefix(seed) + "a"}, Foreign: 1 + rng.Intn(2)}
	if rng.Intn(3) > 0 {
		p.Pools = append(p.Pools, ownedPrefix(seed)+"b")
	}
	// Every run makes its pools at once: a run without one checks
	// nothing. A step's Pick chooses the pool by its index.
	for i := range p.Pools {
		p.Steps = append(p.Steps, ownedStep{Delay: 200 * time.Millisecond, Kind: ownCreate, Pick: i + len(p.Pools)*rng.Intn(100)})
	}
	for range ownedStepsMin + rng.Intn(ownedStepsMore) {
		p.Steps = append(p.Steps, ownedStep{Delay: time.Duration(300+rng.Intn(1700)) * time.Millisecond,
			Kind: ownedKinds[rng.Intn(len(ownedKinds))], Pick: rng.Intn(1000)})
	}
	// Drawn last, so the rest of a seed's plan stays as it was. The first
	// free server of generation "b", which every selector of either pool
	// matches and which comes first by name among them (the order of
	// claims), is IPMI: every run's pools drive an IPMI BMC. Up to two
	// more fall anywhere, foreign ones included.
	p.IPMI = []int{firstFreeB(p.Foreign)}
	for range rng.Intn(3) {
		if i := rng.Intn(ownedServers); !slices.Contains(p.IPMI, i) {
			p.IPMI = append(p.IPMI, i)
		}
	}
	slices.Sort(p.IPMI)
	// Drawn after the IPMI servers, for the same reason. Two or three
	// servers a pool may claim, never the IPMI server every run's pools
	// drive first (its installs must succeed for the IPMI commands to be
	// judged), nor the one set aside.
	p.SetAside = setAside(p.Foreign)
	broken := 2 + rng.Intn(2)
	for len(p.Broken) < broken {
		i := p.Foreign + rng.Intn(ownedServers-p.Foreign)
		if i != firstFreeB(p.Foreign) && i != p.SetAside && !slices.Contains(p.Broken, i) {
			p.Broken = append(p.Broken, i)
		}
	}
	slices.Sort(p.Broken)
	p.HTTPBoot = -1
	drawMedia(rng, &p)
	return p
}

// firstFreeB is the index of the first server of generation "b" (odd
// indexes) after the foreign ones.
func firstFreeB(foreign int) int { return foreign | 1 }

// setAside is the index of the first server after the foreign ones that
// is not firstFreeB.
func setAside(foreign int) int {
	if foreign == firstFreeB(foreign) {
		return foreign + 1
	}
	return foreign
}

func (p ownedPlan) String() string {
	out := fmt.Sprintf("owned pools %v, %d foreign server(s), IPMI servers %v, broken installs %v, set aside %d, virtual media %v, UEFI HTTP %d:",
		p.Pools, p.Foreign, p.IPMI, p.Broken, p.SetAside, p.Media, p.HTTPBoot)
	for _, s := range p.Steps {
		out += fmt.Sprintf(" %s/%d", s.Kind, s.Pick)
	}
	return out
}

// ownedPrefix names the run's servers, pools, Instances and their nodes:
// apart from runPrefix, so that the Metal checks leave them alone.
func ownedPrefix(seed int64) string { return "own" + strconv.FormatInt(seed, 10) + "-" }

// ownedServer is one server and its BMC.
type ownedServer struct {
	spec    ownedfleet.Spec
	bmc     ownedBMC
	foreign bool
	// gen is the value of ownedGenLabel: the selectors a rollout switches
	// between choose "a" alone or both.
	gen string
}

type ownedWorld struct {
	plan ownedPlan
	seed int64
	addr string
	// loaders is the boot endpoint's folder of boot loaders.
	loaders string
	fleet   *ownedfleet.Fleet
	servers []*ownedServer
	strays  []string
	stop    context.CancelFunc
	claims  *claimTimeline
	boots   *bootLog
	prober  *prober
	surge   *ownedSurgeWatch
	// surgeFindings are the surge watch's, once it stopped.
	surgeFindings []string
	mu            sync.Mutex
	notes         []string
	deleted       map[string]bool
	made          map[string]bool
	// addresses is the AddressPool of the first pool's servers.
	addresses string
}

// startOwned makes the owned world: the fleet, its BMCs and Inventories,
// the foreign servers' Nodes, and the watches the checks read.
func startOwned(t *testing.T, env *framework.Env, seed int64) *ownedWorld {
	t.Helper()
	ctx, cancel := context.WithCancel(env.Ctx)
	w := &ownedWorld{plan: newOwnedPlan(seed), seed: seed, stop: cancel, deleted: map[string]bool{}, made: map[string]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	w.addr = ln.Addr().String()
	require.NoError(t, ln.Close())
	w.loaders = bootLoaders(t)
	_, err = env.Kube.CoreV1().Namespaces().Create(env.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ownedSecrets}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	w.boots = newBootLog()
	w.fleet = ownedfleet.New(ownedfleet.Options{Kube: env.Kube,
		Expect:  joinagent.Expect{ServerURL: "https://" + framework.VIP + ":443", Token: framework.JoinToken},
		Version: framework.HarvesterVersion, Endpoint: "http://" + w.addr,
		InstallTime: ownedInstall, HeartbeatInterval: time.Second, HTTPClient: w.boots.client("fleet")})
	w.fleet.Start(ctx)
	w.claims = watchClaims(ctx, env, ownedPrefix(seed))
	prefix := ownedPrefix(seed)
	for i := range ownedServers {
		// The foreign servers come first by name, the order in which free
		// servers are claimed: a controller that took them would take them
		// first.
		s := &ownedServer{foreign: i < w.plan.Foreign, gen: []string{"a", "b"}[i%2]}
		s.spec = ownedfleet.Spec{Name: fmt.Sprintf("%ss%d", prefix, i), MAC: ownedMAC(seed, i),
			UUID: fmt.Sprintf("4c4c4544-0029-%04x-8000-%012x", seed%0x10000, i), Disk: ownedGoodDisk}
		disk := ownedGoodDisk
		if slices.Contains(w.plan.Broken, i) {
			// Its Inventory names another disk than the server has: the
			// install fails and the server never joins.
			disk = ownedBrokenDisk
		}
		s.bmc = w.addBMC(t, s.spec, slices.Contains(w.plan.IPMI, i), w.plan.bmcOptions(i))
		if rf, ok := s.bmc.(redfishBMC); ok && rf.media != nil && i == w.plan.Media[len(w.plan.Media)-1] {
			// Someone installs the last of them by hand from their own
			// image: the pools boot it another way, and their image stays.
			rf.media.foreign, rf.media.fromStart = foreignImage, true
			rf.rf.BMC.SetMedia(bmcsim.MediaSlotCD, foreignImage)
		}
		t.Cleanup(func() { _ = s.bmc.close() })
		if s.foreign {
			// A user's node: its kubelet runs, no pool made it.
			_, err := env.Kube.CoreV1().Nodes().Create(env.Ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: s.spec.Name}}, metav1.CreateOptions{})
			require.NoError(t, err)
			kubelet(env, s.spec.Name, true)
		}
		w.register(t, env, s, disk, i == w.plan.SetAside)
		w.servers = append(w.servers, s)
	}
	for i := range 2 {
		w.strays = append(w.strays, ownedMAC(seed, 0x80+i))
	}
	w.prober = startProber(ctx, w)
	w.addresses = env.CreateAddressPool(prefix+"addresses", ownedAddressCIDR, ownedAddressGateway, ownedNameserver)
	return w
}

func ownedMAC(seed int64, i int) string {
	return fmt.Sprintf("52:54:29:%02x:%02x:%02x", (seed>>8)&0xff, seed&0xff, i)
}

// addBMC gives the fleet's server spec a BMC: ipmi_sim behind a relay
// when ipmi, the Redfish responder otherwise. Without ipmi_sim the run
// has Redfish servers only (under CI=true it fails: CI must drive IPMI).
func (w *ownedWorld) addBMC(t *testing.T, spec ownedfleet.Spec, ipmi bool, opts bmcsim.Options) ownedBMC {
	t.Helper()
	if ipmi {
		b, err := w.fleet.AddIPMI(spec, bmcUser, bmcPassword, ipmisim.Options{Dir: t.TempDir()})
		switch {
		case errors.Is(err, ipmisim.ErrNotInstalled) && os.Getenv("CI") != "true":
			t.Logf("seed %d: %v; %s is a Redfish server", w.seed, err, spec.Name)
		case err != nil:
			t.Fatalf("IPMI BMC of %s: %v", spec.Name, err)
		default:
			return ipmiBMC{b: b}
		}
	}
	rf, err := w.fleet.AddRedfish(spec, bmcUser, bmcPassword, opts)
	require.NoError(t, err)
	b := redfishBMC{rf: rf}
	if opts.VirtualMedia != bmcsim.VirtualMediaNone {
		b.media = &mediaLog{}
		rf.BMC.OnMediaChange(b.media.record)
	}
	return b
}

// register writes a server's BMC Secret and Inventory as a user does.
func (w *ownedWorld) register(t *testing.T, env *framework.Env, s *ownedServer, disk string, setAside bool) {
	t.Helper()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ownedSecrets, Name: s.spec.Name},
		Data: map[string][]byte{seederv1alpha1.SecretUsernameKey: []byte(bmcUser), seederv1alpha1.SecretPasswordKey: []byte(bmcPassword)}}
	_, err := env.Kube.CoreV1().Secrets(ownedSecrets).Create(env.Ctx, sec, metav1.CreateOptions{})
	require.NoError(t, err)
	inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: seederv1alpha1.InventoryNamespace, Name: s.spec.Name,
		Labels: map[string]string{ownedLabel: strconv.FormatInt(w.seed, 10), ownedGenLabel: s.gen}}}
	if setAside {
		inv.Labels[equinixv1.LabelQuarantined] = "true"
	}
	inv.Spec.ManagementInterfaceMacAddress = s.spec.MAC
	inv.Spec.PrimaryDisk = disk
	inv.Spec.BaseboardManagementSpec.Connection = inventoryConnection(s)
	inv.Spec.Events = seederv1alpha1.Events{PollingInterval: "1h"}
	_, err = env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace).Create(env.Ctx, inv, metav1.CreateOptions{})
	require.NoError(t, err)
}

// args run the hardware controller with the owned pools and their boot
// endpoint, on an address that stays the same across its restarts.
func (w *ownedWorld) args() []string {
	return []string{"--owned-pools", "--ipxe-address", w.addr, "--ipxe-public-url", "http://" + w.addr, "--boot-loaders-dir", w.loaders}
}

func (w *ownedWorld) note(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.notes = append(w.notes, fmt.Sprintf(format, args...))
}

// play runs the owned plan until it ends or stop closes.
func (w *ownedWorld) play(r *run, stop <-chan struct{}) {
	began := time.Now()
	w.surge = watchOwnedSurge(r, w)
	playSteps(r.env.Ctx, stop, w.plan.Steps, func(s ownedStep) time.Duration { return s.Delay }, 250*time.Millisecond,
		func() {},
		func(s ownedStep) {
			w.note("%6.2fs owned %s %d: %s", time.Since(began).Seconds(), s.Kind, s.Pick, w.do(r, s))
		})
}

func (w *ownedWorld) do(r *run, s ownedStep) string {
	pool := w.plan.Pools[s.Pick%len(w.plan.Pools)]
	srv := w.servers[s.Pick%len(w.servers)]
	switch s.Kind {
	case ownCreate:
		return w.createPool(r, pool, int32(1+s.Pick%2))
	case ownScale:
		return w.updatePool(r, pool, func(p *equinixv1.InstancePool) string {
			p.Spec.Count = int32(s.Pick % 3)
			return fmt.Sprintf("count %d", p.Spec.Count)
		})
	case ownRollout:
		return w.updatePool(r, pool, func(p *equinixv1.InstancePool) string {
			sel := p.Spec.Servers.Selector.MatchLabels
			if _, narrow := sel[ownedGenLabel]; narrow {
				delete(sel, ownedGenLabel)
			} else {
				sel[ownedGenLabel] = "b"
			}
			// Bounds below the free servers, so that a surge has servers to
			// overrun them with; never both 0, which the API refuses.
			surge, unavailable := []string{"0", "1", "25%"}[s.Pick%3], []string{"0", "1", "50%"}[s.Pick/3%3]
			if surge == "0" && unavailable == "0" {
				unavailable = "1"
			}
			p.Spec.Rollout = rolloutStrategy(poolSpec{Surge: surge, Unavailable: unavailable})
			return fmt.Sprintf("selector %v, maxSurge %s, maxUnavailable %s", sel, surge, unavailable)
		})
	case ownDelete:
		err := r.env.Client.EquinixV1().InstancePools().Delete(r.env.Ctx, pool, metav1.DeleteOptions{})
		if err != nil {
			return "refused: " + err.Error()
		}
		w.mu.Lock()
		w.deleted[pool] = true
		w.mu.Unlock()
		return "deleted " + pool
	case ownMediaLost, ownForeignMedia, ownEjectRefused:
		return w.mediaFault(srv, s.Kind, s.Pick)
	case ownRefuse, ownFail, ownLost:
		return fmt.Sprintf("%s (%s): %s", srv.spec.Name, srv.bmc.protocol(), srv.bmc.fault(s.Kind, s.Pick))
	case ownBreak, ownRepair:
		disk := ownedGoodDisk
		if s.Kind == ownBreak {
			// The configuration names another disk than the server's: the
			// install fails and the server never joins.
			disk = ownedBrokenDisk
		}
		return w.setDisk(r, srv, disk)
	}
	return "unknown step"
}

func (w *ownedWorld) createPool(r *run, name string, count int32) string {
	p := &equinixv1.InstancePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Spec.Count = count
	match := map[string]string{ownedLabel: strconv.FormatInt(w.seed, 10)}
	if name != w.plan.Pools[0] {
		// The second pool's servers are among the first's.
		match[ownedGenLabel] = "b"
	}
	p.Spec.Servers = &equinixv1.OwnedServers{Selector: metav1.LabelSelector{MatchLabels: match}}
	p.Spec.Remediation.StartupTimeout = &metav1.Duration{Duration: ownedStartupTimeout}
	p.Spec.Remediation.QuarantineAfter = ownedQuarantineAfter
	if name == w.plan.Pools[0] {
		p.Spec.Servers.AddressPool, p.Spec.Servers.Nameservers = w.addresses, []string{ownedNameserver}
	}
	_, err := r.env.Client.EquinixV1().InstancePools().Create(r.env.Ctx, p, metav1.CreateOptions{})
	if err != nil {
		return "refused: " + err.Error()
	}
	w.mu.Lock()
	w.made[name] = true
	w.mu.Unlock()
	return fmt.Sprintf("made %s, count %d, selector %v", name, count, match)
}

func (w *ownedWorld) updatePool(r *run, name string, change func(*equinixv1.InstancePool) string) string {
	pools := r.env.Client.EquinixV1().InstancePools()
	p, err := pools.Get(r.env.Ctx, name, metav1.GetOptions{})
	if err != nil {
		return "refused: " + err.Error()
	}
	what := change(p)
	if _, err := pools.Update(r.env.Ctx, p, metav1.UpdateOptions{}); err != nil {
		return "refused: " + err.Error()
	}
	return what
}

// setDisk breaks or repairs a server's install. A person who repaired one
// clears its quarantine too, as the docs say.
func (w *ownedWorld) setDisk(r *run, s *ownedServer, disk string) string {
	invs := r.env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace)
	inv, err := invs.Get(r.env.Ctx, s.spec.Name, metav1.GetOptions{})
	if err != nil {
		return "refused: " + err.Error()
	}
	inv.Spec.PrimaryDisk = disk
	cleared := ""
	if _, ok := inv.Labels[equinixv1.LabelQuarantined]; ok && disk == ownedGoodDisk {
		delete(inv.Labels, equinixv1.LabelQuarantined)
		cleared = ", quarantine cleared"
	}
	if _, err := invs.Update(r.env.Ctx, inv, metav1.UpdateOptions{}); err != nil {
		return "refused: " + err.Error()
	}
	return s.spec.Name + " installs onto " + disk + cleared
}

// server returns the server of an Inventory, nil if it is none of the
// world's.
func (w *ownedWorld) server(name string) *ownedServer {
	for _, s := range w.servers {
		if s.spec.Name == name {
			return s
		}
	}
	return nil
}

// serverOfMAC returns the server whose NIC mac is, nil for a stray MAC.
func (w *ownedWorld) serverOfMAC(mac string) *ownedServer {
	for _, s := range w.servers {
		if equalMAC(s.spec.MAC, mac) {
			return s
		}
	}
	return nil
}

// remove deletes what the world made; the controllers are stopped.
func (w *ownedWorld) remove(t *testing.T, env *framework.Env) {
	w.stop()
	ctx := context.Background()
	removeLeftovers(t, env, ownedPrefix(w.seed))
	for _, s := range w.servers {
		_ = env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace).Delete(ctx, s.spec.Name, metav1.DeleteOptions{})
		_ = env.Kube.CoreV1().Secrets(ownedSecrets).Delete(ctx, s.spec.Name, metav1.DeleteOptions{})
	}
	if nodes, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		for _, n := range nodes.Items {
			if strings.HasPrefix(n.Name, ownedPrefix(w.seed)) {
				_ = env.Kube.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
			}
		}
	}
}
