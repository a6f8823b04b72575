package chaos

import (
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
)

// The BMC world of a run: nodes the addon did not provision, one behind the
// project's Redfish responder and one behind OpenIPMI's ipmi_sim (through a
// relay that follows its sessions), each mapped by Seeder's Inventory as
// Harvester's UI writes it (credentials in an unlabelled Secret of another
// namespace), polled every bmcPoll by a second controller in the hardware
// mode, the harvester-seeder install beside the Equinix one. While the main
// plan runs, the BMC plan (drawn from the seed apart from the main plan,
// which stays as it was) asks their servers for power operations with the
// calls Harvester's node action makes, switches their nodes' maintenance
// mode, logs events, and makes the Redfish BMC refuse a request (as one that
// dropped the session), forget its sessions, stall or go away for a moment,
// and the IPMI one answer late. The controller kills and apiserver restarts
// of the main plan hit the hardware controller too.
const (
	bmcPoll = 2 * time.Second
	// bmcTimeout is the controller's --bmc-timeout in the campaign; a stall
	// outlasts it.
	bmcTimeout   = 2 * time.Second
	bmcUser      = "admin"
	bmcPassword  = "Chaos-bmc-pw-4417"
	bmcStepsMin  = 12
	bmcStepsMore = 10
	// bmcSecrets is where the UI's user keeps the BMC Secrets.
	bmcSecrets = "chaos-bmc"
)

var bmcArgs = []string{"--bmc-timeout", bmcTimeout.String()}

type bmcKind string

const (
	bmcPower      bmcKind = "power"
	bmcReboot     bmcKind = "reboot"
	bmcMaintain   bmcKind = "maintain"
	bmcUnmaintain bmcKind = "unmaintain"
	bmcEvent      bmcKind = "event"
	bmcRefuse     bmcKind = "refuse-once"
	bmcForget     bmcKind = "forget-sessions"
	bmcStall      bmcKind = "stall"
	bmcAway       bmcKind = "go-away"
	bmcSlowIPMI   bmcKind = "ipmi-slow"
)

var bmcKinds = []bmcKind{bmcPower, bmcPower, bmcReboot, bmcMaintain, bmcMaintain, bmcUnmaintain, bmcEvent, bmcEvent,
	bmcRefuse, bmcForget, bmcStall, bmcAway, bmcSlowIPMI}

type bmcStep struct {
	Delay time.Duration
	Kind  bmcKind
	Pick  int
}

func newBMCPlan(seed int64) []bmcStep {
	rng := rand.New(rand.NewSource(seed*7919 + 17))
	var out []bmcStep
	for range bmcStepsMin + rng.Intn(bmcStepsMore) {
		out = append(out, bmcStep{Delay: time.Duration(300+rng.Intn(1500)) * time.Millisecond,
			Kind: bmcKinds[rng.Intn(len(bmcKinds))], Pick: rng.Intn(1000)})
	}
	return out
}

// bmcNode is one node with a BMC and its Inventory. A twin's Inventory
// names the Redfish BMC of the first node too (a BMC that manages two
// nodes, or a copy-paste): the two owners' passes run at once and must
// share one session. The plan leaves a twin's power alone.
type bmcNode struct {
	name string
	ipmi bool
	twin bool
	uid  string
}

type bmcWorld struct {
	rf    *bmcsim.BMC
	rfSrv *bmcsim.Server
	// ipmi and relay are nil without ipmi_sim (outside CI).
	ipmi  *ipmisim.Sim
	relay *ipmisim.Relay
	nodes []bmcNode
	plan  []bmcStep

	mu       sync.Mutex
	notes    []string
	requests int
	// seen counts the power commands each BMC got that the world has played
	// the kubelet for.
	seen map[string]int
}

// startBMCs makes the BMC world: the BMCs, their nodes (Ready, as a kubelet
// makes them), Secrets and Inventories.
func startBMCs(t *testing.T, env *framework.Env, seed int64) *bmcWorld {
	t.Helper()
	w := &bmcWorld{plan: newBMCPlan(seed), seen: map[string]int{}}
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	require.NoError(t, cluster.InstallCRDs(env.Ctx, env.Cluster.RESTConfig, cluster.InventoryCRDDir(root)))
	_, err = env.Kube.CoreV1().Namespaces().Create(env.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bmcSecrets}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	w.rf = bmcsim.New(bmcsim.Options{Username: bmcUser, Password: bmcPassword, PowerTransition: time.Second})
	srv, err := bmcsim.NewServer(w.rf, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	w.rfSrv = srv
	prefix := runPrefix(seed)
	w.nodes = append(w.nodes, bmcNode{name: prefix + "bmc-rf"}, bmcNode{name: prefix + "bmc-rf-twin", twin: true})
	sim, err := ipmisim.Start(ipmisim.Options{Username: bmcUser, Password: bmcPassword, Dir: t.TempDir()})
	switch {
	case errors.Is(err, ipmisim.ErrNotInstalled):
		t.Logf("seed %d: %v; the BMC world has a Redfish BMC only", seed, err)
	case err != nil:
		t.Fatalf("start ipmi_sim: %v", err)
	default:
		t.Cleanup(func() { _ = sim.Stop() })
		w.ipmi, w.relay = sim, ipmisim.RequireRelay(t, sim)
		w.nodes = append(w.nodes, bmcNode{name: prefix + "bmc-ipmi", ipmi: true})
	}
	for i := range w.nodes {
		n := &w.nodes[i]
		_, err := env.Kube.CoreV1().Nodes().Create(env.Ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name}}, metav1.CreateOptions{})
		require.NoError(t, err)
		w.kubeletReady(env, n.name)
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: bmcSecrets, Name: n.name},
			Data: map[string][]byte{"username": []byte(bmcUser), "password": []byte(bmcPassword)}}
		_, err = env.Kube.CoreV1().Secrets(bmcSecrets).Create(env.Ctx, sec, metav1.CreateOptions{})
		require.NoError(t, err)
		conn := seederv1alpha1.Connection{Host: srv.Host, Port: srv.Port, CABundle: string(srv.CACertPEM)}
		if n.ipmi {
			conn = seederv1alpha1.Connection{Host: "127.0.0.1", Port: seederv1alpha1.IPMIPort,
				ProviderOptions: &seederv1alpha1.ProviderOptions{IPMITOOL: &seederv1alpha1.IPMITOOLOptions{Port: w.relay.Port()}}}
		}
		conn.AuthSecretRef = corev1.SecretReference{Namespace: bmcSecrets, Name: n.name}
		inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: seederv1alpha1.InventoryNamespace, Name: n.name,
			Annotations: map[string]string{seederv1alpha1.AnnotationLocalNodeName: n.name, seederv1alpha1.AnnotationLocalInventory: "true"}}}
		inv.Spec.BaseboardManagementSpec.Connection = conn
		inv.Spec.Events = seederv1alpha1.Events{Enabled: true, PollingInterval: bmcPoll.String()}
		inv, err = env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace).Create(env.Ctx, inv, metav1.CreateOptions{})
		require.NoError(t, err)
		n.uid = string(inv.UID)
	}
	return w
}

// kubeletReady sets the node Ready with a new transition time, as a kubelet
// does when its server came back: a power-on or reboot waits for it.
func (w *bmcWorld) kubeletReady(env *framework.Env, name string) { kubelet(env, name, true) }

func (w *bmcWorld) note(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.notes = append(w.notes, fmt.Sprintf(format, args...))
}

// play runs the BMC plan until it ends or stop closes, and plays the
// kubelets of the BMC nodes throughout.
func (w *bmcWorld) play(r *run, stop <-chan struct{}) {
	began := time.Now()
	playSteps(r.env.Ctx, stop, w.plan, func(s bmcStep) time.Duration { return s.Delay }, 250*time.Millisecond,
		func() { w.followCommands(r) },
		func(s bmcStep) {
			w.note("%6.2fs bmc %s %d: %s", time.Since(began).Seconds(), s.Kind, s.Pick, w.do(r, s))
		})
}

func (w *bmcWorld) do(r *run, s bmcStep) string {
	var own []bmcNode
	for _, n := range w.nodes {
		if !n.twin {
			own = append(own, n)
		}
	}
	n := own[s.Pick%len(own)]
	switch s.Kind {
	case bmcPower:
		return w.request(r, n, "")
	case bmcReboot:
		return w.request(r, n, seederv1alpha1.PowerOperationReboot)
	case bmcMaintain, bmcUnmaintain:
		return w.maintenance(r, n.name, s.Kind == bmcMaintain)
	case bmcEvent:
		if n.ipmi {
			_, err := w.ipmi.AddSEL(0x0c, ipmisim.SensorDIMM, 0x6f, 0x00, byte(s.Pick), 0)
			return errOutcome(err)
		}
		w.rf.AddLogEntry("Warning", fmt.Sprintf("chaos note %d", s.Pick))
		return ""
	case bmcRefuse:
		w.rf.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultUnauthorized, PathPrefix: "/redfish/v1/Systems", Count: 1})
		return "the next system read is refused (401)"
	case bmcForget:
		w.rf.DropSessions()
		return "the Redfish BMC forgot its sessions"
	case bmcStall:
		w.rf.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultLatency, Latency: 2 * bmcTimeout, Count: 1})
		return "the next request outlasts --bmc-timeout"
	case bmcAway:
		if err := w.rfSrv.GoAway(); err != nil {
			return err.Error()
		}
		time.AfterFunc(time.Duration(500+s.Pick)*time.Millisecond, func() { _ = w.rfSrv.ComeBack() })
		return "the Redfish BMC is away for a moment"
	case bmcSlowIPMI:
		if w.relay == nil {
			return "no IPMI BMC"
		}
		w.relay.SetDelay(bmcTimeout + time.Second)
		time.AfterFunc(time.Duration(500+s.Pick)*time.Millisecond, func() { w.relay.SetDelay(0) })
		return "the IPMI BMC answers late for a moment"
	}
	return "unknown step"
}

// request asks for a power operation ("" for shutdown or poweron, whichever
// changes the power last read) with the calls Harvester's powerAction makes
// (pkg/api/node formatter.go, v1.8.0): refused while the last request has
// no actionStatus; otherwise spec.powerActionRequested, then
// status.powerAction.lastJobName cleared. A request counts once its spec is
// written: the controller may take it from the spec alone.
func (w *bmcWorld) request(r *run, n bmcNode, op string) string {
	invs := r.env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace)
	inv, err := invs.Get(r.env.Ctx, n.name, metav1.GetOptions{})
	if err != nil {
		return "refused: " + err.Error()
	}
	if op == "" {
		op = seederv1alpha1.PowerOperationShutdown
		if inv.Status.MachinePowerState == "off" {
			op = seederv1alpha1.PowerOperationPowerOn
		}
	}
	if inv.Spec.PowerActionRequested != "" && inv.Status.PowerAction.LastActionStatus == "" {
		return "refused: the " + inv.Spec.PowerActionRequested + " is pending"
	}
	before := inv.Generation
	inv.Spec.PowerActionRequested = op
	kind := map[string]string{seederv1alpha1.PowerOperationShutdown: "off", seederv1alpha1.PowerOperationPowerOn: "on", seederv1alpha1.PowerOperationReboot: "reboot"}[op]
	updated, err := invs.Update(r.env.Ctx, inv, metav1.UpdateOptions{})
	if err != nil {
		// Only this loop writes the spec: a newer generation asking for op
		// is this write, stored before its answer was lost.
		if !r.landed(func() (bool, error) {
			got, err := invs.Get(r.env.Ctx, n.name, metav1.GetOptions{})
			return err == nil && got.Generation > before && got.Spec.PowerActionRequested == op, err
		}) {
			return "refused: " + err.Error()
		}
		w.counted(r, n, kind)
		return op + ", stored though its answer was lost (status not written): " + err.Error()
	}
	w.counted(r, n, kind)
	updated.Status.PowerAction.LastJobName = ""
	if _, err := invs.UpdateStatus(r.env.Ctx, updated, metav1.UpdateOptions{}); err != nil {
		return op + ", half written (Harvester answers 409): " + err.Error()
	}
	return op
}

// counted records a power request that is stored.
func (w *bmcWorld) counted(r *run, n bmcNode, kind string) {
	r.power.request(n.uid, kind)
	w.mu.Lock()
	w.requests++
	w.mu.Unlock()
}

// maintenance switches a BMC node's maintenance mode as Harvester reports
// it once the node is drained (nothing runs on these nodes).
func (w *bmcWorld) maintenance(r *run, name string, on bool) string {
	value := `null`
	if on {
		value = `"completed"`
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"harvesterhci.io/maintain-status":%s}}}`, value)
	node, err := r.env.Kube.CoreV1().Nodes().Patch(r.env.Ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return "refused: " + err.Error()
	}
	r.power.saw(node, time.Now())
	return ""
}

// followCommands plays the kubelet of a server that a BMC switched on or
// power-cycled: its node turns Ready again.
func (w *bmcWorld) followCommands(r *run) {
	for _, n := range w.nodes {
		count, on := 0, false
		if n.ipmi {
			log := w.ipmi.ChassisControlLog()
			count = len(log)
			on = count > 0 && log[count-1].Byte != 0
		} else {
			log := w.rf.ResetLog()
			count = len(log)
			on = count > 0 && log[count-1].Type != "ForceOff"
		}
		w.mu.Lock()
		fresh := count > w.seen[n.name]
		w.seen[n.name] = count
		w.mu.Unlock()
		if fresh && on {
			w.kubeletReady(r.env, n.name)
		}
	}
}
