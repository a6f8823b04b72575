package networking

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// port is the expected API view of one port.
type port struct {
	bonded bool
	typ    string
	vxlans []int
}

type typeCase struct {
	name       string
	plan       string
	networking string
	typ        string
	ports      map[string]port
	// layer3 says whether the device keeps its addresses.
	layer3 bool
	// statusType is the Instance's status.networkType ("" = not checked).
	statusType string
	// installCalls are the port calls before the installer's reinstall,
	// joinedCalls the ones after it (the layer-2 conversion).
	installCalls []string
	joinedCalls  []string
	// mgmtVLAN is the management VLAN of the layer-2 types: on bond0 while
	// the installer runs, and the VLAN the install was configured with.
	mgmtVLAN int
}

func seedTypeCases() []typeCase {
	return []typeCase{
		{
			name: "layer3 (default)", typ: equinixv1.NetworkTypeLayer3, layer3: true, statusType: "layer3",
			ports: map[string]port{
				"bond0": {true, "layer3", nil}, "eth0": {true, "layer3", nil}, "eth1": {true, "layer3", nil},
			},
		},
		{
			name: "hybrid", networking: framework.SeedHybrid, typ: equinixv1.NetworkTypeHybrid, layer3: true, statusType: "hybrid",
			ports: map[string]port{
				"bond0": {true, "hybrid", nil}, "eth0": {true, "hybrid", nil}, "eth1": {false, "hybrid", []int{1000, 1001}},
			},
			installCalls: []string{"disbondPort eth1 ?bulk_disable=false", "assignPort eth1", "assignPort eth1"},
		},
		{
			name: "hybrid-bonded", networking: framework.SeedHybridBonded, typ: equinixv1.NetworkTypeHybridBonded, layer3: true,
			ports: map[string]port{
				"bond0": {true, "hybrid-bonded", []int{1000, 1001}}, "eth0": {true, "hybrid-bonded", nil}, "eth1": {true, "hybrid-bonded", nil},
			},
			installCalls: []string{"assignPort bond0", "assignPort bond0"},
		},
		{
			name: "layer2-bonded", networking: framework.SeedLayer2Bonded, typ: equinixv1.NetworkTypeLayer2Bonded, statusType: "layer2-bonded", mgmtVLAN: 1000,
			ports: map[string]port{
				"bond0": {true, "layer2-bonded", []int{1000, 1001}}, "eth0": {true, "layer2-bonded", nil}, "eth1": {true, "layer2-bonded", nil},
			},
			installCalls: []string{"assignPort bond0", "assignPort bond0"},
			joinedCalls:  []string{"convertLayer2 bond0"},
		},
		{
			name: "layer2-individual", networking: framework.SeedLayer2Individual, typ: equinixv1.NetworkTypeLayer2Individual, statusType: "layer2-individual", mgmtVLAN: 1000,
			ports: map[string]port{
				"bond0": {false, "layer2-individual", nil}, "eth0": {false, "layer2-individual", []int{1000}}, "eth1": {false, "layer2-individual", []int{1000, 1001}},
			},
			installCalls: []string{"assignPort bond0"},
			joinedCalls: []string{"unassignPort bond0", "convertLayer2 bond0", "disbondPort bond0 ?bulk_disable=true",
				"assignPort eth0", "assignPort eth1", "assignPort eth1"},
		},
	}
}

func caseOf(t *testing.T, typ string) typeCase {
	t.Helper()
	for _, tc := range seedTypeCases() {
		if tc.typ == typ {
			return tc
		}
	}
	t.Fatalf("no case for %s", typ)
	return typeCase{}
}

// Each of the seed's network samples, applied to the seed pool, provisions a
// server whose ports the API reports in that type; the layer-2 types install
// in hybrid-bonded with the management VLAN on bond0 and convert once the
// node has joined, which stays Ready.
func TestSeedNetworkTypes(t *testing.T) {
	for _, tc := range seedTypeCases() {
		t.Run(tc.name, func(t *testing.T) { runTypeCase(t, tc) })
	}
}

// A 4-NIC plan in hybrid takes both odd ports (eth1, eth3) out of their
// bonds for VLANs and leaves eth0, eth2 and the bonds as they are.
func TestHybridOnFourNICPlan(t *testing.T) {
	runTypeCase(t, typeCase{
		name: "n3.xlarge.x86 hybrid", plan: "n3.xlarge.x86", typ: equinixv1.NetworkTypeHybrid, layer3: true, statusType: "hybrid",
		networking: `  networkingConfiguration:
    type: "hybrid"
    interfaceConfiguration:
      - name: eth1
        vlanIDS:
          - "1000"
          - "1001"
      - name: eth3
        vlanIDS:
          - "1002"
`,
		ports: map[string]port{
			"bond0": {true, "hybrid", nil}, "eth0": {true, "hybrid", nil}, "eth1": {false, "hybrid", []int{1000, 1001}},
			// bond1 carries no addresses and starts in layer 2; eth3 leaves it.
			"bond1": {true, "layer2-bonded", nil}, "eth2": {true, "layer2-bonded", nil}, "eth3": {false, "layer2-individual", []int{1002}},
		},
		installCalls: []string{"disbondPort eth1 ?bulk_disable=false", "disbondPort eth3 ?bulk_disable=false",
			"assignPort eth1", "assignPort eth1", "assignPort eth3"},
	})
}

func runTypeCase(t *testing.T, tc typeCase) {
	env := framework.New(t, &shared, framework.Options{})
	boots := recordInstallerBoots(env)
	name := "net-" + strings.NewReplacer(" ", "-", "(", "", ")", "", ".", "").Replace(tc.name)
	p := framework.SeedPoolWith(t, name, tc.networking)
	if tc.plan != "" {
		p.Spec.Plan = tc.plan
		// Its boot drives are 240GB, under what the installer of the
		// tests' Harvester version accepts: install on an NVMe drive.
		p.Spec.InstallDevice = "/dev/nvme0n1"
	}
	pool := env.CreatePool(p)
	env.WaitPoolReady(pool.Name, 1, 90*time.Second)
	inst := waitJoinedNetwork(t, env, pool.Name, tc.typ)
	reqs := env.Sim.Requests()
	names := portNames(t, env, inst.Status.InstanceID)

	before, after, reinstalls := callsAroundReinstall(reqs, names)
	t.Logf("%s: %d Metal API requests until converged: %s", tc.name, len(reqs), formatCounts(countByOperation(reqs)))
	assert.Equal(t, 1, reinstalls, "the server must be installed exactly once")
	assert.Equal(t, tc.installCalls, before, "port calls before the installer ran")
	assert.Equal(t, tc.joinedCalls, after, "port calls after the node joined")

	dev := readDevice(t, env, inst.Status.InstanceID)
	assertPorts(t, tc.ports, dev)
	if tc.layer3 {
		assert.Len(t, dev.Addresses, 3, "a layer-3 device keeps public IPv4, private IPv4 and public IPv6")
		assert.NotEmpty(t, inst.Status.PublicIP)
		assert.NotEmpty(t, inst.Status.PrivateIP)
	} else {
		assert.Empty(t, dev.Addresses, "a layer-2 device has no addresses after the join")
		assert.Empty(t, inst.Status.PublicIP)
		assert.Empty(t, inst.Status.PrivateIP)
	}
	if tc.statusType != "" {
		assert.Equal(t, tc.statusType, inst.Status.NetworkType)
	}

	assertInstall(t, env, tc, boots.all())
	ready := nodeReady(t, env, inst.Name)
	assert.Equal(t, corev1.ConditionTrue, ready.Status, "node %s after the final conversion: %s %s", inst.Name, ready.Reason, ready.Message)

	assertConvergedIsIdle(t, env, inst)
	env.AssertNoSecretLeaks()
}

func assertPorts(t *testing.T, want map[string]port, got deviceView) {
	t.Helper()
	assert.Len(t, got.Ports, len(want), "ports of the device")
	for name, w := range want {
		g, ok := got.Ports[name]
		if !assert.True(t, ok, "no port %s", name) {
			continue
		}
		assert.Equal(t, w.bonded, g.Bonded, "%s data.bonded", name)
		assert.Equal(t, w.typ, g.NetworkType, "%s network_type", name)
		assert.Equal(t, w.vxlans, nilIfEmpty(g.VXLANs), "%s VLANs", name)
	}
}

func nilIfEmpty(xs []int) []int {
	if len(xs) == 0 {
		return nil
	}
	return xs
}

// assertInstall checks the ports the installer ran on and what it was
// configured with.
func assertInstall(t *testing.T, env *framework.Env, tc typeCase, boots []metalsim.NetworkState) {
	t.Helper()
	require.Len(t, boots, 1, "one installer boot")
	results := env.Agent.Results()
	require.NotEmpty(t, results)
	last := results[len(results)-1]
	require.True(t, last.OK, last.Reason)
	assert.Equal(t, tc.mgmtVLAN, last.VLANID, "management VLAN of the install")
	if tc.mgmtVLAN == 0 {
		return
	}
	install := boots[0]
	assert.Equal(t, equinixv1.NetworkTypeHybridBonded, install.Type, "the layer-2 types install in hybrid-bonded")
	bond0, ok := portState(install, "bond0")
	require.True(t, ok)
	assert.False(t, bond0.Layer2, "bond0 stays in layer 3 for the installer")
	assert.Contains(t, ints32(bond0.VLANs), tc.mgmtVLAN, "the management VLAN is on bond0 for the installer")
	assert.NotEmpty(t, install.Addresses, "the installer reaches the metadata service over layer 3")
}

// assertConvergedIsIdle re-runs the chains on the converged server: an
// unrelated change costs no Metal call at all, and a forced re-plan (the
// recorded configuration hash cleared) reads the device once and calls no
// port operation.
func assertConvergedIsIdle(t *testing.T, env *framework.Env, inst equinixv1.Instance) {
	t.Helper()
	env.Sim.ResetRequests()
	touchInstance(t, env, inst.Name)
	assert.Never(t, func() bool { return len(portRequests(env.Sim.Requests())) > 0 }, time.Second, 100*time.Millisecond,
		"a reconcile of a converged server called a port operation")
	assert.Empty(t, env.Sim.Requests(), "a reconcile of a converged server called the Metal API")

	env.Sim.ResetRequests()
	hash := inst.Status.NetworkConfigHash
	require.NotEmpty(t, hash)
	updateInstanceStatus(t, env, inst.Name, func(s *equinixv1.InstanceStatus) { s.NetworkConfigHash = "" })
	env.Eventually(func() bool {
		i, err := env.Client.EquinixV1().Instances().Get(env.Ctx, inst.Name, metav1.GetOptions{})
		return err == nil && i.Status.NetworkConfigHash == hash
	}, 30*time.Second, "the networking chain did not re-plan")
	settle(t, env)
	reqs := env.Sim.Requests()
	t.Logf("re-plan of a converged server: %s", formatCounts(countByOperation(reqs)))
	assert.Empty(t, portRequests(reqs), "a re-plan of a converged server called a port operation")
	assert.Equal(t, 1, countByOperation(reqs)[metalsim.OpFindDeviceByID], "a re-plan reads the device once")
}
