package ownedpools

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/ownedfleet"
)

// The network of the address tests: 10.0.2.0/29 less its gateway (.1)
// and three reserved addresses (.2 the name server) leaves two: .5 and .6.
const (
	addressCIDR    = "10.0.2.0/29"
	addressGateway = "10.0.2.1"
	addressDNS     = "10.0.2.2"
)

var addressReserved = []string{"10.0.2.2", "10.0.2.3", "10.0.2.4"}

// A pool on a network without DHCP, with an AddressPool of two addresses
// under Seeder's own CRD (what Seeder leaves behind): two servers install
// and join with one address each, in the boot endpoint's installer script
// and install configuration, while the pool's status is written by
// another writer all along (each write of the controller's that meets one
// conflicts and is read again). Scaled down, a server gives its address
// back; scaled to three, one new Instance takes the freed address (its
// boot image, read from the endpoint as its BMC would, carries it) and
// the third waits with AddressPoolExhausted.
func TestStaticAddressesFromAnAddressPool(t *testing.T) {
	env, fleet, addr := fleetEnv(t)
	seedersAddressPoolCRD(t, env)
	pool := env.CreateAddressPool("rack-s-addresses", addressCIDR, addressGateway, addressReserved...)
	stop := churnAddressPool(t, env, pool)

	var specs []ownedfleet.Spec
	for i := 1; i <= 2; i++ {
		spec := ownedfleet.Spec{Name: fmt.Sprintf("rack-s-%d", i), MAC: mac(80 + i), UUID: fmt.Sprintf("4c4c4544-0029-1010-8000-b2c04f0000%02d", 80+i),
			Disk: "/dev/nvme0n1"}
		rf, err := fleet.AddRedfish(spec, bmcUser, bmcPassword, bmcsim.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = rf.Close() })
		registerInventory(t, env, spec, bmcPassword, framework.RedfishInventory(spec.Name, rf.Server), map[string]string{"rack": "s"})
		specs = append(specs, spec)
	}
	p := ownedPool("rack-s", 2, map[string]string{"rack": "s"})
	p.Spec.Servers.AddressPool = pool
	p.Spec.Servers.Nameservers = []string{addressDNS}
	createPool(t, env, p)

	require.Eventually(t, func() bool {
		insts := instancesOf(t, env, "rack-s")
		return len(insts) == 2 && insts[0].Status.Status == equinixv1.PhaseManaged && insts[1].Status.Status == equinixv1.PhaseManaged
	}, wait, tick, "the servers never installed and joined: %+v", fleet.Results())
	stop()
	held := assertAddressesHeld(t, env, pool, instancesOf(t, env, "rack-s"))
	assert.ElementsMatch(t, []string{"10.0.2.5/29", "10.0.2.6/29"}, held)
	assert.Equal(t, seederv1alpha1.PoolExhausted, env.AddressPool(pool).Status.Status)
	for _, inst := range instancesOf(t, env, "rack-s") {
		res := bootResult(t, fleet, inst.Status.Server)
		require.True(t, res.OK, "%+v", res)
		ip, _, _ := strings.Cut(inst.Status.ManagementAddress, "/")
		assert.Equal(t, ownedfleet.Network{Method: "static", IP: ip, SubnetMask: "255.255.255.248", Gateway: addressGateway,
			DNS: []string{addressDNS}}, res.Network, "the installed node's address is the one handed out")
		assert.Equal(t, []string{"ifname=bootnic:" + specMAC(specs, inst.Status.Server),
			"ip=" + ip + "::" + addressGateway + ":255.255.255.248::bootnic:none", "nameserver=" + addressDNS},
			res.LiveNetwork, "the installer's live system takes the address, not DHCP")
	}

	// Scaled down, the server gives its address back.
	scale(t, env, "rack-s", 1)
	require.Eventually(t, func() bool { return len(instancesOf(t, env, "rack-s")) == 1 }, wait, tick)
	kept := instancesOf(t, env, "rack-s")[0]
	freed := "10.0.2.5/29"
	if kept.Status.ManagementAddress == freed {
		freed = "10.0.2.6/29"
	}
	assert.Equal(t, []string{kept.Status.ManagementAddress}, assertAddressesHeld(t, env, pool, []equinixv1.Instance{kept}))
	assert.Equal(t, seederv1alpha1.PoolReady, env.AddressPool(pool).Status.Status)
	// The released server leaves the pool's selection; two servers whose
	// BMCs offer virtual media take its place: no simulated firmware boots
	// them, so that their claims stay open.
	for _, s := range specs {
		if s.Name != kept.Status.Server {
			unlabel(t, env, s.Name)
		}
	}
	vm := bmcsim.Options{VirtualMedia: bmcsim.VirtualMediaOnSystem}
	media := map[string]*server{
		"rack-s-3": addServerWith(t, env, "rack-s-3", mac(83), map[string]string{"rack": "s"}, vm),
		"rack-s-4": addServerWith(t, env, "rack-s-4", mac(84), map[string]string{"rack": "s"}, vm),
	}
	scale(t, env, "rack-s", 3)

	var booting, waiting equinixv1.Instance
	require.Eventually(t, func() bool {
		booting, waiting = equinixv1.Instance{}, equinixv1.Instance{}
		for _, inst := range instancesOf(t, env, "rack-s") {
			c := conditions.Get(inst.Status.Conditions, equinixv1.InstanceInstalling)
			switch {
			case inst.Name == kept.Name:
			case inst.Status.ManagementAddress != "" && inst.Status.PowerRequestedAt != nil:
				booting = inst
			case inst.Status.Server != "" && c != nil && c.Status == metav1.ConditionFalse && c.Reason == equinixv1.ReasonAddressPoolExhausted:
				waiting = inst
			}
		}
		return booting.Name != "" && waiting.Name != ""
	}, wait, tick, "one new Instance should take the freed address and the other wait for one")
	assert.Equal(t, freed, booting.Status.ManagementAddress, "the freed address is handed out again")
	assert.Nil(t, waiting.Status.NetworkBootRequestedAt, "a server without an address is not booted")
	assert.Nil(t, waiting.Status.BootMediaInsertedAt, "a server without an address is not booted")
	assert.False(t, media[waiting.Status.Server].bmc.MediaIn(bmcsim.MediaSlotCD).Inserted)
	assert.Equal(t, "management address", waiting.Status.WaitingFor)
	assert.ElementsMatch(t, []string{kept.Status.ManagementAddress, freed},
		assertAddressesHeld(t, env, pool, []equinixv1.Instance{kept, booting}))

	// The boot image of the open claim, read at the URL its BMC was told,
	// configures the address: the server boots with no DHCP at all.
	assert.Equal(t, equinixv1.BootPathVirtualMedia, booting.Status.BootPath)
	inserted := media[booting.Status.Server].bmc.MediaIn(bmcsim.MediaSlotCD)
	require.True(t, inserted.Inserted)
	require.True(t, strings.HasPrefix(inserted.Image, "http://"+addr+"/boot/"), inserted.Image)
	script := bootScriptOf(t, inserted.Image)
	ip, _, _ := strings.Cut(freed, "/")
	for _, line := range []string{"set ${nic}/ip " + ip, "set ${nic}/netmask 255.255.255.248", "set ${nic}/gateway " + addressGateway,
		"set ${nic}/dns " + addressDNS} {
		assert.Contains(t, script, line+"\n")
	}
	assert.NotContains(t, script, "dhcp ${nic}")

	// Scaled to nothing, every address is given back; the reserved ones
	// stay as Seeder records them.
	scale(t, env, "rack-s", 0)
	require.Eventually(t, func() bool { return len(instancesOf(t, env, "rack-s")) == 0 }, wait, tick)
	got := env.AddressPool(pool).Status.AddressAllocation
	assert.Len(t, got, len(addressReserved))
	for _, a := range addressReserved {
		assert.Equal(t, seederv1alpha1.AllocationKindReserved, got[a].Kind)
	}
}

// seedersAddressPoolCRD puts Seeder v1.8.0's own AddressPool CRD in place
// of the chart's, as a cluster where Seeder ran has it; the chart's is put
// back when the test ends.
func seedersAddressPoolCRD(t *testing.T, env *framework.Env) {
	t.Helper()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	only := t.TempDir()
	raw, err := os.ReadFile(filepath.Join(framework.SeederCRDDir(root), "metal.harvesterhci.io_addresspools.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(only, "addresspools.yaml"), raw, 0o600))
	require.NoError(t, cluster.InstallCRDs(env.Ctx, env.Cluster.RESTConfig, only))
	t.Cleanup(func() { _ = cluster.InstallCRDs(env.Ctx, env.Cluster.RESTConfig, cluster.InventoryCRDDir(root)) })
}

// churnAddressPool writes the AddressPool again and again (an annotation,
// as another controller's writes would) until stop: every write of the
// addon's that carries an older resourceVersion conflicts.
func churnAddressPool(t *testing.T, env *framework.Env, name string) (stop func()) {
	t.Helper()
	done, finished := make(chan struct{}), make(chan struct{})
	pools := env.Client.MetalV1alpha1().AddressPools(seederv1alpha1.InventoryNamespace)
	go func() {
		defer close(finished)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			p, err := pools.Get(env.Ctx, name, metav1.GetOptions{})
			if err != nil {
				continue
			}
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations["test.harvesterhci.io/churn"] = fmt.Sprint(i)
			_, _ = pools.Update(env.Ctx, p, metav1.UpdateOptions{})
		}
	}()
	var once bool
	stop = func() {
		if !once {
			once = true
			close(done)
			<-finished
		}
	}
	t.Cleanup(stop)
	return stop
}

// assertAddressesHeld checks that each Instance's address is recorded in
// the pool under its server, and no address twice; it returns the
// addresses.
func assertAddressesHeld(t *testing.T, env *framework.Env, pool string, insts []equinixv1.Instance) []string {
	t.Helper()
	p := env.AddressPool(pool)
	var held []string
	for addr, ref := range p.Status.AddressAllocation {
		if ref.Kind == seederv1alpha1.AllocationKindInventory {
			held = append(held, addr)
		}
	}
	var got []string
	for _, inst := range insts {
		ip, _, _ := strings.Cut(inst.Status.ManagementAddress, "/")
		ref, ok := p.Status.AddressAllocation[ip]
		assert.True(t, ok, "%s's address %s is not recorded", inst.Name, inst.Status.ManagementAddress)
		assert.Equal(t, seederv1alpha1.ObjectReferenceWithKind{Kind: seederv1alpha1.AllocationKindInventory,
			ObjectReference: seederv1alpha1.ObjectReference{Name: inst.Status.Server, Namespace: ns}}, ref)
		assert.Equal(t, addressGateway, inst.Status.ManagementGateway)
		got = append(got, inst.Status.ManagementAddress)
	}
	sort.Strings(held)
	assert.Len(t, held, len(insts), "the pool holds one address per Instance, no more: %v", held)
	assert.Len(t, slices.Compact(slices.Sorted(slices.Values(got))), len(got), "two Instances share an address: %v", got)
	return got
}

func specMAC(specs []ownedfleet.Spec, server string) string {
	for _, s := range specs {
		if s.Name == server {
			return strings.ToLower(s.MAC)
		}
	}
	return ""
}

// unlabel takes a server out of every pool's selection.
func unlabel(t *testing.T, env *framework.Env, name string) {
	t.Helper()
	invs := env.Client.MetalV1alpha1().Inventories(ns)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		inv, err := invs.Get(env.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		delete(inv.Labels, "rack")
		_, err = invs.Update(env.Ctx, inv, metav1.UpdateOptions{})
		return err
	}))
}

// bootScriptOf reads a claim's boot image at its URL, as its BMC does,
// and returns the iPXE script it holds (a plain file of the image, ended
// by its sector's padding).
func bootScriptOf(t *testing.T, imageURL string) string {
	t.Helper()
	resp, err := http.Get(imageURL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	_, script, ok := strings.Cut(string(body), "#!ipxe\n")
	require.True(t, ok, "the image holds no iPXE script")
	script, _, _ = strings.Cut(script, "\x00")
	return script
}

// A pool whose AddressPool is missing, then unusable, holds its server
// unbooted with the Installing condition saying why (a Warning Event
// each); the AddressPool's creation and correction bring the Instance
// back without any other change, and the server boots with its address.
func TestAddressPoolMissingThenInvalid(t *testing.T) {
	env := newEnv(t)
	s := addServer(t, env, "rack-m-1", mac(90), map[string]string{"rack": "m"})
	p := ownedPool("rack-m", 1, map[string]string{"rack": "m"})
	p.Spec.Servers.AddressPool = "rack-m-addresses"
	p.Spec.Servers.Nameservers = []string{addressDNS}
	createPool(t, env, p)

	waitReason := func(reason string) equinixv1.Instance {
		t.Helper()
		var inst equinixv1.Instance
		require.Eventually(t, func() bool {
			insts := instancesOf(t, env, "rack-m")
			if len(insts) != 1 {
				return false
			}
			inst = insts[0]
			c := conditions.Get(inst.Status.Conditions, equinixv1.InstanceInstalling)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason
		}, wait, tick, "the Instance never said %s", reason)
		assert.Equal(t, s.name, inst.Status.Server, "the server is claimed")
		assert.Nil(t, inst.Status.NetworkBootRequestedAt, "but not booted without an address")
		assert.Empty(t, inst.Status.ManagementAddress)
		return inst
	}
	inst := waitReason(equinixv1.ReasonAddressPoolNotFound)
	assert.True(t, env.EventRecorded(inst.Name, equinixv1.ReasonAddressPoolNotFound))

	// A /31 leaves no address beside its gateway.
	pools := env.Client.MetalV1alpha1().AddressPools(ns)
	_, err := pools.Create(env.Ctx, &seederv1alpha1.AddressPool{ObjectMeta: metav1.ObjectMeta{Name: "rack-m-addresses", Namespace: ns},
		Spec: seederv1alpha1.AddressSpec{CIDR: "10.0.2.0/31", Gateway: "10.0.2.1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pools.Delete(env.Ctx, "rack-m-addresses", metav1.DeleteOptions{}) })
	inst = waitReason(equinixv1.ReasonAddressPoolInvalid)
	assert.True(t, env.EventRecorded(inst.Name, equinixv1.ReasonAddressPoolInvalid))

	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := pools.Get(env.Ctx, "rack-m-addresses", metav1.GetOptions{})
		if err != nil {
			return err
		}
		got.Spec.CIDR = "10.0.2.0/24"
		_, err = pools.Update(env.Ctx, got, metav1.UpdateOptions{})
		return err
	}))
	require.Eventually(t, func() bool {
		insts := instancesOf(t, env, "rack-m")
		return len(insts) == 1 && insts[0].Status.ManagementAddress == "10.0.2.2/24" && insts[0].Status.NetworkBootRequestedAt != nil
	}, wait, tick, "the corrected pool never gave the server its address")
	// The boot's intent is stored before the BMC's command is sent.
	require.Eventually(t, func() bool { n, _ := s.networkBoots(); return n > 0 }, wait, tick, "the server was never booted")
	n, _ := s.networkBoots()
	assert.Equal(t, 1, n, "booted once, with its address")
}
