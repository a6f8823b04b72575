package ownedvm

import (
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/joinagent"
	"github.com/harvester/harvester-equinix-addon/tests/sim/qemubmc"
)

// A pool of three servers whose BMCs offer virtual media, on a network
// with no DHCP server, grows to two, shrinks to one and heals: each
// server it boots starts from the addon's image in its virtual CD under
// OVMF, whose iPXE applies the static address the AddressPool gave the
// server and fetches its installer script; the installer's configuration
// names the same address; no DHCP packet crosses the machine's network
// from the claim to the configuration fetched; each BMC is asked the
// least (insert, boot override, power on; eject at the join).
func TestVirtualMediaPoolGrowsShrinksAndHealsWithoutDHCP(t *testing.T) {
	env, bootNet := rigEnv(t)
	lbls := map[string]string{"rack": "vm"}
	servers := map[string]*server{}
	for i := 1; i <= 3; i++ {
		s := addServer(t, env, bootNet, i, lbls)
		servers[s.name] = s
	}
	// The network's name server and the boot endpoint are never handed
	// out.
	addresses := env.CreateAddressPool("qemu-user-network", "10.0.2.0/24", gateway, nameserver, strings.TrimSuffix(guestEndpoint, ":80"))
	pool := &equinixv1.InstancePool{ObjectMeta: metav1.ObjectMeta{Name: "vm"}}
	pool.Spec.Count = 2
	pool.Spec.Servers = &equinixv1.OwnedServers{Selector: metav1.LabelSelector{MatchLabels: lbls},
		BootPath: equinixv1.BootPathVirtualMedia, AddressPool: addresses, Nameservers: []string{nameserver}}
	// A node not Ready for this long is replaced (the least allowed).
	pool.Spec.NodeCleanupWaitInterval = &metav1.Duration{Duration: time.Minute}
	createPool(t, env, pool)

	// Grow to two: both servers boot their image and join.
	var joined []equinixv1.Instance
	for _, claim := range claimsOf(t, env, "vm", 2, nil) {
		joined = append(joined, installAndJoin(t, env, bootNet, servers[claim.inst.Status.Server], claim))
	}

	// Shrink to one: the released server is powered off (its machine
	// ended) and holds no media; its address goes back to the pool.
	env.EditPool("vm", func(p *equinixv1.InstancePool) { p.Spec.Count = 1 })
	require.Eventually(t, func() bool { return len(instancesOf(t, env, "vm")) == 1 }, wait, tick, "the pool never shrank to one")
	kept := instancesOf(t, env, "vm")[0]
	released := servers[joined[0].Status.Server]
	if released.name == kept.Status.Server {
		released = servers[joined[1].Status.Server]
	}
	require.Eventually(t, func() bool { return !released.bmc.Running() }, wait, tick, "%s's machine still runs", released.name)
	assert.Equal(t, "Off", released.bmc.Sim.PowerState())
	assert.False(t, released.bmc.Sim.MediaIn(bmcsim.MediaSlotCD).Inserted, "no media left mounted on %s", released.name)
	assert.Equal(t, "quit", lastOf(released.lastLife(t).QMP), "the power-off ended the machine")
	got, log := released.commands()
	assert.Equal(t, commands{insert: 1, boot: 1, power: 2, eject: 1}, got, "%s: on, eject at the join, off: %v", released.name, log)
	require.Eventually(t, func() bool { return !holds(env, addresses, released.name) }, wait, tick, "%s's address was never given back", released.name)
	// The released server is taken out of the rack, so that the heal
	// below brings in the third server.
	editInventory(t, env, released.name, func(inv *seederv1alpha1.Inventory) { inv.Labels["rack"] = "elsewhere" })

	// Heal: the kept node is found not Ready since a minute ago, as after
	// a failure the test need not wait out; the pool replaces it with the
	// third server, which boots the same way.
	notReadySince(t, env, kept.Status.NodeName, time.Now().Add(-time.Minute))
	replacement := claimsOf(t, env, "vm", 1, func(i equinixv1.Instance) bool { return i.Name != kept.Name })[0]
	third := servers[replacement.inst.Status.Server]
	require.NotContains(t, []string{released.name, kept.Status.Server}, third.name, "the third server replaces the unhealthy one")
	installAndJoin(t, env, bootNet, servers[replacement.inst.Status.Server], replacement)
	require.Eventually(t, func() bool {
		insts := instancesOf(t, env, "vm")
		return len(insts) == 1 && insts[0].Name == replacement.inst.Name
	}, wait, tick, "the unhealthy Instance was never released")
	healed := servers[kept.Status.Server]
	require.Eventually(t, func() bool { return !healed.bmc.Running() }, wait, tick, "%s's machine still runs", healed.name)
	assert.False(t, healed.bmc.Sim.MediaIn(bmcsim.MediaSlotCD).Inserted, "no media left mounted on %s", healed.name)
	require.Eventually(t, func() bool { return !holds(env, addresses, healed.name) }, wait, tick, "%s's address was never given back", healed.name)
	// Between its power-on and its power-off, the unhealthy server may be
	// power-cycled (at most twice) before its replacement is ready.
	got, log = healed.commands()
	assert.Equal(t, 1, got.insert, "%v", log)
	assert.Equal(t, 1, got.eject, "%v", log)
	assert.Equal(t, 1, got.boot, "%v", log)
	assert.GreaterOrEqual(t, got.power, 2, "on, then off: %v", log)
	assert.LessOrEqual(t, got.power, 4, "on, two cycles at most, off: %v", log)
	t.Logf("%s, healed away: BMC commands %v; QMP %v", healed.name, log, healed.lastLife(t).QMP)
}

// claim is an Instance that holds a server, and when the test saw it do.
type claim struct {
	inst equinixv1.Instance
	seen time.Time
}

// claimsOf waits for n of the pool's Instances (those of which, when not
// nil) to hold a server, and returns them as the test first saw each.
func claimsOf(t *testing.T, env *framework.Env, pool string, n int, which func(equinixv1.Instance) bool) []claim {
	t.Helper()
	seen := map[string]claim{}
	require.Eventually(t, func() bool {
		for _, i := range instancesOf(t, env, pool) {
			if _, ok := seen[i.Name]; !ok && i.Status.Server != "" && (which == nil || which(i)) {
				seen[i.Name] = claim{inst: i, seen: time.Now()}
			}
		}
		return len(seen) >= n
	}, wait, tick, "the pool never claimed %d servers", n)
	out := make([]claim, 0, len(seen))
	for _, c := range seen {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b claim) int { return strings.Compare(a.inst.Status.Server, b.inst.Status.Server) })
	return out
}

// installAndJoin follows one claimed server from its BMC's commands to
// its join: the machine boots the image and fetches its installer script
// with the static address; the test, as the installer, fetches the
// configuration that script names and registers the node Ready; the
// image leaves the virtual CD. It checks the capture and the commands,
// and logs where the time went.
func installAndJoin(t *testing.T, env *framework.Env, bootNet *qemubmc.BootNetwork, s *server, c claim) equinixv1.Instance {
	t.Helper()
	script := waitScript(t, bootNet, s)
	inst := waitInstance(t, env, c.inst.Name, "the server's static address", func(i *equinixv1.Instance) bool { return i.Status.ManagementAddress != "" })
	assert.Equal(t, equinixv1.BootPathVirtualMedia, inst.Status.BootPath)
	address := netip.MustParsePrefix(inst.Status.ManagementAddress)
	life := s.lastLife(t)
	assert.Equal(t, "Cd", life.Boot, "%s started from its virtual CD", s.name)
	assert.Contains(t, life.Serial(), "Static address "+address.String(), "%s's iPXE applied the static address", s.name)
	assert.Contains(t, script.Body, address.Addr().String(), "the installer's live system gets the address too")

	// The installer reads its configuration at the URL its kernel was
	// given, which the script names.
	config := get(t, hostURL(t, bootNet, configURLOf(t, script.Body)))
	configFetched := time.Now()
	assert.Contains(t, config, address.Addr().String(), "the installed node keeps the static address")

	frames, err := qemubmc.CountFrames(life.Capture(), configFetched)
	require.NoError(t, err)
	assert.Zero(t, frames.DHCP, "%s: no DHCP packet from the claim to the configuration fetched", s.name)
	assert.Positive(t, frames.TCPTo[netip.MustParseAddrPort(guestEndpoint)], "%s: the capture sees the fetch, so it sees the network", s.name)
	t.Logf("%s: capture of %d frames, %d DHCP (%d after the configuration was fetched)", s.name, frames.Frames, frames.DHCP, frames.DHCPLater)
	logShares(t, s, c.seen, bootNet.ImageRead(s.mac), script.At, configFetched)

	node := env.JoinOwnedServer(&inst)
	inst = waitInstance(t, env, inst.Name, "the join and the eject", func(i *equinixv1.Instance) bool {
		return i.Status.Status == equinixv1.PhaseManaged && i.Status.NodeName == node && i.Status.BootMediaEjectedAt != nil
	})
	assert.False(t, s.bmc.Sim.MediaIn(bmcsim.MediaSlotCD).Inserted, "%s: no media left mounted after the join", s.name)
	require.Eventually(t, func() bool { return slices.Contains(s.lastLife(t).QMP, "eject") }, wait, tick,
		"%s: the eject never reached the machine's drive", s.name)
	got, log := s.commands()
	assert.Equal(t, commands{insert: 1, boot: 1, power: 1, eject: 1}, got, "%s: the least the BMC can be asked: %v", s.name, log)
	require.NoError(t, s.bmc.Err(), "%s's BMC carried out what it was told", s.name)
	return inst
}

// waitScript waits for the server's machine to fetch its installer
// script, and stops early when its BMC failed to carry something out.
func waitScript(t *testing.T, bootNet *qemubmc.BootNetwork, s *server) qemubmc.Fetched {
	t.Helper()
	var f qemubmc.Fetched
	require.Eventually(t, func() bool {
		var ok bool
		f, ok = bootNet.Script(s.mac)
		return ok || s.bmc.Err() != nil
	}, bootWait, tick, "%s never fetched its installer script", s.name)
	require.NoError(t, s.bmc.Err(), "%s's BMC carried out what it was told", s.name)
	return f
}

// logShares logs where a boot's time went: the controller's (the claim
// to the insert command, then to the power-on), the BMC's (the power-on
// to the image read) and the firmware's (the image to the script
// fetched). Measured, never asserted.
func logShares(t *testing.T, s *server, claimed, imageRead, scriptFetched, configFetched time.Time) {
	t.Helper()
	var inserted time.Time
	for _, m := range s.bmc.MediaChanges() {
		if m.Inserted {
			inserted = m.At
		}
	}
	life := s.lastLife(t)
	t.Logf("%s: claim→insert %s (controller), insert→power-on %s (controller), power-on→image read %s (BMC), "+
		"image→script fetched %s (firmware and iPXE), script→configuration %s (the test's installer); claim→configuration %s",
		s.name, round(inserted.Sub(claimed)), round(life.PoweredOn.Sub(inserted)), round(imageRead.Sub(life.PoweredOn)),
		round(scriptFetched.Sub(imageRead)), round(configFetched.Sub(scriptFetched)), round(configFetched.Sub(claimed)))
}

func round(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }

func waitInstance(t *testing.T, env *framework.Env, name, what string, ok func(*equinixv1.Instance) bool) equinixv1.Instance {
	t.Helper()
	var inst *equinixv1.Instance
	require.Eventually(t, func() bool {
		var err error
		inst, err = env.Client.EquinixV1().Instances().Get(env.Ctx, name, metav1.GetOptions{})
		return err == nil && ok(inst)
	}, wait, tick, "Instance %s: %s", name, what)
	return *inst
}

// configURLOf is the install configuration's URL in a script.
func configURLOf(t *testing.T, script string) string {
	t.Helper()
	u := joinagent.ConfigURL(strings.Fields(script))
	if u == "" {
		t.Fatalf("no config_url in\n%s", script)
	}
	return u
}

func get(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u) //nolint:noctx // the test's own endpoint
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", u, b)
	return string(b)
}

// holds says whether the AddressPool has an address out to the server.
func holds(env *framework.Env, pool, server string) bool {
	p, err := env.Client.MetalV1alpha1().AddressPools(seederv1alpha1.InventoryNamespace).Get(env.Ctx, pool, metav1.GetOptions{})
	if err != nil {
		return true
	}
	for _, ref := range p.Status.AddressAllocation {
		if ref.Name == server {
			return true
		}
	}
	return false
}

func editInventory(t *testing.T, env *framework.Env, name string, edit func(*seederv1alpha1.Inventory)) {
	t.Helper()
	require.Eventually(t, func() bool {
		invs := env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace)
		inv, err := invs.Get(env.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		edit(inv)
		_, err = invs.Update(env.Ctx, inv, metav1.UpdateOptions{})
		return err == nil
	}, wait, tick)
}

func createPool(t *testing.T, env *framework.Env, p *equinixv1.InstancePool) {
	t.Helper()
	_, err := env.Client.EquinixV1().InstancePools().Create(env.Ctx, p, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Client.EquinixV1().InstancePools().Delete(env.Ctx, p.Name, metav1.DeleteOptions{})
		assert.Eventually(t, func() bool { return len(instancesOf(t, env, p.Name)) == 0 }, wait, tick, "pool %s's Instances were never released", p.Name)
	})
}

// notReadySince sets the node's Ready condition to Unknown since then, as
// the node lifecycle controller does when the kubelet stops posting.
func notReadySince(t *testing.T, env *framework.Env, name string, since time.Time) {
	t.Helper()
	require.Eventually(t, func() bool {
		n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
			LastHeartbeatTime: metav1.NewTime(since), LastTransitionTime: metav1.NewTime(since)}}
		_, err = env.Kube.CoreV1().Nodes().UpdateStatus(env.Ctx, n, metav1.UpdateOptions{})
		return err == nil
	}, wait, tick)
}

func lastOf(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}
