package vip

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// metro is the seed pool's metro, where the VIP is reserved too.
const metro = "sg"

// world is a cluster as the issue describes it: a first node a person
// installed, a pool of the addon's servers, the VIP an Elastic IP of the
// project and Harvester's Service for it.
type world struct {
	*framework.Env
	first, firstDevice string
	pool               string
	// servers are the pool's nodes; devices maps every node to its device.
	servers []string
	devices map[string]string
	ledger  *framework.AddressLedger
	metal   metal.Client
}

// inProcess runs the controller in this process with the VIP's ElasticIP
// on; configure adjusts more.
func inProcess(configure func(*config.Config)) framework.Options {
	return framework.Options{Configure: func(c *config.Config) {
		c.VIPElasticIP = true
		c.ElasticIPResync = 5 * time.Second
		if configure != nil {
			configure(c)
		}
	}}
}

// newWorld builds the world with servers pool servers.
func newWorld(t *testing.T, env *framework.Env, name string, servers int) *world {
	return newWorldThen(t, env, name, servers, nil)
}

// newWorldThen runs beforePool (which starts a controller, say) once the VIP
// is reserved and the first node exists, and then makes the pool.
func newWorldThen(t *testing.T, env *framework.Env, name string, servers int, beforePool func()) *world {
	t.Helper()
	w := &world{Env: env, first: name + "-first", pool: name, devices: map[string]string{},
		metal: env.MetalClient(framework.MetalToken, framework.ProjectID)}
	env.ReserveVIP(metro)
	env.IngressExpose()
	w.ledger = env.WatchAddress(framework.VIP)
	w.firstDevice = env.FirstNode(w.first, metro)
	w.devices[w.first] = w.firstDevice
	if beforePool != nil {
		beforePool()
	}
	if servers > 0 {
		p := framework.SeedPoolWith(t, name, "")
		p.Spec.Count = int32(servers)
		env.CreatePool(p)
		env.WaitPoolReady(name, servers, 2*time.Minute)
		for _, inst := range env.Instances(name) {
			w.servers = append(w.servers, inst.Name)
			w.devices[inst.Name] = inst.Status.InstanceID
		}
		slices.Sort(w.servers)
	}
	return w
}

// follow names node as the VIP holder and waits until the VIP's ElasticIP
// reports it assigned to the node's device, and the simulator agrees.
func (w *world) follow(node string, timeout time.Duration) {
	w.T.Helper()
	require.NoError(w.T, w.SetVIPHost(node))
	w.waitOn(node, timeout)
}

func (w *world) waitOn(node string, timeout time.Duration) {
	w.T.Helper()
	dev := w.devices[node]
	ok := assert.Eventually(w.T, func() bool {
		eip := w.ElasticIP(equinixv1.VIPElasticIPName)
		return eip != nil && eip.Status.Status == equinixv1.ElasticIPPhaseAssigned && eip.Status.DeviceID == dev &&
			eip.Status.NodeName == node && slices.Equal(w.ledger.Holders(), []string{dev})
	}, timeout, 50*time.Millisecond, "the VIP did not follow to %s (device %s)", node, dev)
	if !ok {
		w.dump()
		w.T.FailNow()
	}
}

func (w *world) dump() {
	eip := w.ElasticIP(equinixv1.VIPElasticIPName)
	if eip == nil {
		w.T.Logf("no ElasticIP %s", equinixv1.VIPElasticIPName)
		return
	}
	w.T.Logf("elasticip: status=%s node=%s device=%s move=%+v; holders %v", eip.Status.Status, eip.Status.NodeName,
		eip.Status.DeviceID, eip.Status.Move, w.ledger.Holders())
	for _, c := range eip.Status.Conditions {
		w.T.Logf("  %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
}

// condition waits for a condition of the VIP's ElasticIP.
func (w *world) condition(condType string, status metav1.ConditionStatus, reason string, timeout time.Duration) *metav1.Condition {
	w.T.Helper()
	var got *metav1.Condition
	ok := assert.Eventually(w.T, func() bool {
		eip := w.ElasticIP(equinixv1.VIPElasticIPName)
		if eip == nil {
			return false
		}
		got = conditions.Get(eip.Status.Conditions, condType)
		return got != nil && got.Status == status && got.Reason == reason
	}, timeout, 50*time.Millisecond, "no %s=%s (%s)", condType, status, reason)
	if !ok {
		w.dump()
		w.T.FailNow()
	}
	return got
}

// events are the Events of the VIP's ElasticIP with reason, oldest first.
func (w *world) events(reason string) []string {
	var out []string
	for _, ev := range w.Events(equinixv1.VIPElasticIPName) {
		if ev.Reason == reason && ev.InvolvedObject.Kind == "ElasticIP" {
			out = append(out, ev.Message)
		}
	}
	return out
}

// noOverlap checks the address was never on two devices.
func (w *world) noOverlap() {
	w.T.Helper()
	assert.Empty(w.T, w.ledger.Overlaps(), "the VIP was on two devices at once")
}

// foreign is what a person keeps in the project besides the VIP: a block
// with an address assigned to the first node's device, and an unassigned
// Elastic IP. The addon must leave both as they are.
type foreign struct {
	block, single string
	assigned      string
}

func (w *world) addForeign() foreign {
	w.T.Helper()
	block, err := w.metal.ReserveIPs(w.Ctx, metal.ReserveIPsRequest{Quantity: 4, Metro: metro, Tags: []string{"someone-else"}})
	require.NoError(w.T, err)
	a, err := w.metal.AssignIP(w.Ctx, w.firstDevice, block.Address+"/32")
	require.NoError(w.T, err)
	single, err := w.metal.ReserveIPs(w.Ctx, metal.ReserveIPsRequest{Quantity: 1, Metro: metro})
	require.NoError(w.T, err)
	return foreign{block: block.ID, single: single.ID, assigned: a.ID}
}

// check: both reservations exist, the block's address is still on the first
// node's device, and the single one is still unassigned.
func (f foreign) check(w *world) {
	w.T.Helper()
	block, err := w.metal.GetIPReservation(w.Ctx, f.block)
	require.NoError(w.T, err, "the foreign block")
	require.Len(w.T, block.Assignments, 1)
	assert.Equal(w.T, f.assigned, block.Assignments[0].ID)
	assert.Equal(w.T, w.firstDevice, block.Assignments[0].DeviceID)
	single, err := w.metal.GetIPReservation(w.Ctx, f.single)
	require.NoError(w.T, err, "the foreign single address")
	assert.Empty(w.T, single.Assignments)
}

func nodeNamed(t *testing.T, w *world, name string) *corev1.Node {
	t.Helper()
	n, err := w.Kube.CoreV1().Nodes().Get(w.Ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	return n
}

// columns runs the real kubectl get, as a user would, and splits its lines.
func columns(t *testing.T, w *world, args ...string) [][]string {
	t.Helper()
	out, err := exec.Command(filepath.Join(cluster.DefaultBinDir(), "kubectl"),
		append([]string{"--kubeconfig", w.Cluster.Kubeconfig, "get"}, args...)...).CombinedOutput()
	require.NoError(t, err, string(out))
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		rows = append(rows, strings.Fields(line))
	}
	return rows
}

func describe(w *world) string {
	eip := w.ElasticIP(equinixv1.VIPElasticIPName)
	if eip == nil {
		return "none"
	}
	return fmt.Sprintf("%s on %s (%s)", eip.Status.Status, eip.Status.DeviceID, eip.Status.NodeName)
}
