package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/nodedown"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// The fencing world of a run: fenceNodes nodes the addon did not provision,
// each with a Redfish BMC of its own and an Inventory, fenced by the
// hardware controller (--fencing, at most fenceBound at once, after
// fenceGrace); the first of them is the node the controller runs on
// (--node-name). While the main plan runs (with its controller kills and
// apiserver restarts, which hit the hardware controller too), a plan drawn
// from the seed apart from the others flaps their kubelets (NotReady, Ready
// again while the server is on) and sends a BMC away for a moment; a person
// switches on a server the addon switched off after a moment, and its
// kubelet comes back. Harvester's own node-down controller (tests/nodedown,
// the code of the harvester module go.mod pins) runs beside it, as on every
// Harvester: with vm-force-reset-policy at a 1-second period and a 3-second
// migration timeout it taints a node whose kubelet went silent
// out-of-service on its own, without asking the BMC, and takes the taint away
// when the node is Ready. Invariants: never more fenced than the bound (nodes
// the addon tainted out-of-service, servers off, at any moment), never the
// controller's node (no taint of the addon's, no command to its BMC), one
// command per step (a server gets at most one power-off per time it was on,
// and no other command), every taint lifted once the nodes are back, and a
// node tainted out-of-service by anyone while its server is on for
// fenceReportWithin of the controller's running time, the kube-apiserver
// serving, is reported (a Warning
// Event FenceTaintedNotFenced on the Node, from after the span began).
const (
	fenceNodes = 4
	fenceBound = 1
	fenceGrace = 2 * time.Second
	// fenceSwitchOn is how long the person takes to switch a server the
	// addon switched off back on.
	fenceSwitchOn = 1500 * time.Millisecond
	fenceStepsMin = 10
	fenceStepsMax = 8
	// fenceReportWithin is how long a node may carry the out-of-service
	// taint while its server is on, the controller running, before a
	// report of it is due: a pass follows the taint within a second or
	// two, and a BMC that is away answers within bmcTimeout.
	fenceReportWithin = 15 * time.Second
)

// harvesterPolicy is the vm-force-reset-policy of the runs: Harvester
// taints a silent node 4 seconds after it turned Unknown, and the fence
// comes a second after it did, before Harvester's taint when nothing holds
// it.
var harvesterPolicy = framework.NodeDownPolicy{Enable: true, Period: 1, VMMigrationTimeout: 3}

type fenceKind string

const (
	fenceDown fenceKind = "kubelet-down"
	fenceUp   fenceKind = "kubelet-up"
	fenceAway fenceKind = "bmc-away"
)

var fenceKinds = []fenceKind{fenceDown, fenceDown, fenceDown, fenceUp, fenceAway}

type fenceStep struct {
	Delay time.Duration
	Kind  fenceKind
	Pick  int
}

func newFencePlan(seed int64) []fenceStep {
	rng := rand.New(rand.NewSource(seed*104729 + 31))
	var out []fenceStep
	for range fenceStepsMin + rng.Intn(fenceStepsMax) {
		out = append(out, fenceStep{Delay: time.Duration(400+rng.Intn(1600)) * time.Millisecond,
			Kind: fenceKinds[rng.Intn(len(fenceKinds))], Pick: rng.Intn(1000)})
	}
	return out
}

// dueReport is a node tainted while its server was on long enough that a
// report of it is due: one made at since or later (the span's start, or the
// controller's last start within it).
type dueReport struct {
	node  string
	since time.Time
}

type fenceNode struct {
	name string
	sim  *bmcsim.BMC
	srv  *bmcsim.Server
}

type fenceWorld struct {
	nodes []fenceNode
	plan  []fenceStep
	stop  chan struct{}
	// harvester is Harvester's node-down controller; marks say when the
	// addon's controllers run.
	harvester *nodedown.Controller
	marks     *disturbances

	mu    sync.Mutex
	notes []string
	// anyTainted are the nodes carrying an out-of-service taint of anyone's
	// (the addon's or Harvester's); harvesterTaints counts Harvester's.
	anyTainted      map[string]bool
	harvesterTaints int
	// unfencedSince is when each node began to carry the taint while its
	// server was on; dueReports the spans that lasted fenceReportWithin of
	// the controller's running time, with the moment from which their
	// report counts.
	unfencedSince map[string]time.Time
	dueReports    []dueReport
	// tainted are the nodes tainted out-of-service now, as the watch saw
	// them; mostTainted the most at once in the order the watch delivered
	// them, taints how many times one was; history is every change with
	// the Node's resourceVersion, by which the bound is judged.
	tainted     map[string]bool
	mostTainted int
	taints      int
	history     *taintHistory
	// watchOrder is the first moment the watch, in its delivery order,
	// showed more tainted than the bound.
	watchOrder string
	// judged is the history the bound was judged on (etcd's writes when
	// it kept them all, else the watch's), storeNote what etcd showed.
	judged    *taintHistory
	storeNote string
	// mostOff is the most servers off at once; offSince when each went off.
	mostOff  int
	offSince map[string]time.Time
	// switchedOn counts the person's switch-ons of each server.
	switchedOn map[string]int
	flaps      int
	// findings are the broken invariants, each with how often it was seen.
	findings map[string]int
}

// startFencing makes the fencing world: the BMCs, their nodes (Ready),
// Secrets and Inventories, and the watch on the nodes' taints.
func startFencing(t *testing.T, env *framework.Env, seed int64, marks *disturbances) *fenceWorld {
	t.Helper()
	w := &fenceWorld{plan: newFencePlan(seed), stop: make(chan struct{}), tainted: map[string]bool{}, history: newTaintHistory(),
		offSince: map[string]time.Time{}, switchedOn: map[string]int{}, findings: map[string]int{}, marks: marks,
		anyTainted: map[string]bool{}, unfencedSince: map[string]time.Time{}}
	w.harvester = nodedown.Start(t, env.Cluster)
	_, err := framework.SetNodeDownPolicy(env.Ctx, env.Client, harvesterPolicy)
	require.NoError(t, err)
	prefix := runPrefix(seed)
	for i := range fenceNodes {
		sim := bmcsim.New(bmcsim.Options{Username: bmcUser, Password: bmcPassword, PowerTransition: 500 * time.Millisecond})
		srv, err := bmcsim.NewServer(sim, "")
		require.NoError(t, err)
		t.Cleanup(func() { _ = srv.Close() })
		n := fenceNode{name: fmt.Sprintf("%sfence-%d", prefix, i), sim: sim, srv: srv}
		w.nodes = append(w.nodes, n)
		_, err = env.Kube.CoreV1().Nodes().Create(env.Ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name}}, metav1.CreateOptions{})
		require.NoError(t, err)
		kubelet(env, n.name, true)
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: bmcSecrets, Name: n.name},
			Data: map[string][]byte{"username": []byte(bmcUser), "password": []byte(bmcPassword)}}
		_, err = env.Kube.CoreV1().Secrets(bmcSecrets).Create(env.Ctx, sec, metav1.CreateOptions{})
		require.NoError(t, err)
		inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: seederv1alpha1.InventoryNamespace, Name: n.name}}
		inv.Spec.BaseboardManagementSpec.Connection = seederv1alpha1.Connection{Host: srv.Host, Port: srv.Port, CABundle: string(srv.CACertPEM),
			AuthSecretRef: corev1.SecretReference{Namespace: bmcSecrets, Name: n.name}}
		inv.Spec.Events = seederv1alpha1.Events{Enabled: true, PollingInterval: bmcPoll.String()}
		_, err = env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace).Create(env.Ctx, inv, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	w.watchTaints(env)
	return w
}

// args are the hardware controller's fencing flags.
func (w *fenceWorld) args() []string {
	return []string{"--fencing", fmt.Sprintf("--fencing-max-fenced=%d", fenceBound), "--fencing-grace-period=" + fenceGrace.String(),
		"--node-name=" + w.own()}
}

// own is the node the controller runs on.
func (w *fenceWorld) own() string { return w.nodes[0].name }

func (w *fenceWorld) isFenceNode(name string) bool {
	for _, n := range w.nodes {
		if n.name == name {
			return true
		}
	}
	return false
}

// watchTaints follows every change of the fence nodes' taints through an
// informer (it lists again after an apiserver restart), with each Node's
// resourceVersion: the order of the apiserver's writes.
func (w *fenceWorld) watchTaints(env *framework.Env) {
	factory := informers.NewSharedInformerFactory(env.Kube, 0)
	inf := factory.Core().V1().Nodes().Informer()
	seen := func(obj any) {
		n, ok := obj.(*corev1.Node)
		if !ok || !w.isFenceNode(n.Name) {
			return
		}
		rv, err := strconv.ParseUint(n.ResourceVersion, 10, 64)
		if err != nil {
			w.note("fence watch: node %s has resourceVersion %q: %v", n.Name, n.ResourceVersion, err)
			return
		}
		own, anyone := outOfService(n)
		w.observeTaint(n.Name, own, rv, time.Now())
		w.observeAnyTaint(n.Name, anyone, own)
	}
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, obj any) { seen(obj) }})
	factory.Start(w.stop)
}

// outOfService says whether the node carries the addon's out-of-service
// taint (value nodeshutdown: the bound and the controller's node are
// judged on it) and whether it carries one of anyone's (Harvester's has no
// value).
func outOfService(n *corev1.Node) (own, anyone bool) {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeOutOfService {
			anyone = true
			own = own || t.Value == equinixv1.TaintOutOfServiceValue
		}
	}
	return own, anyone
}

// observeAnyTaint records whether a fence node carries anyone's
// out-of-service taint, counting Harvester's as they go on.
func (w *fenceWorld) observeAnyTaint(name string, anyone, own bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if anyone && !own && !w.anyTainted[name] {
		w.harvesterTaints++
	}
	if anyone {
		w.anyTainted[name] = true
	} else {
		delete(w.anyTainted, name)
	}
}

// observeTaint records a fence node's taint as its Node at resourceVersion
// rv shows it. The bound is judged later on the history, in the
// apiserver's order; what the watch showed at once in its own order is
// kept to tell the two apart.
func (w *fenceWorld) observeTaint(name string, on bool, rv uint64, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.history.observe(name, on, rv, at)
	if on && !w.tainted[name] {
		w.taints++
	}
	if on {
		w.tainted[name] = true
	} else {
		delete(w.tainted, name)
	}
	if len(w.tainted) > w.mostTainted {
		w.mostTainted = len(w.tainted)
	}
	if len(w.tainted) > fenceBound && w.watchOrder == "" {
		w.watchOrder = fmt.Sprintf("after %s at rv %d (%s): %v", name, rv, at.UTC().Format("15:04:05.000"), keys(w.tainted))
	}
	if on && name == w.own() {
		w.findings[fmt.Sprintf("the controller's own node %s was tainted out-of-service", name)]++
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// kubelet sets a node Ready, or NotReady (Unknown, as the node lifecycle
// controller marks a kubelet that stopped posting), with a new transition
// time.
func kubelet(env *framework.Env, name string, ready bool) {
	n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, name, metav1.GetOptions{})
	if err != nil {
		return
	}
	if ready && harvester.IsNodeReady(n) {
		// A kubelet that is Ready renews its Lease, not its condition: a
		// status written at every look of the quiesce makes every other
		// writer's update of the Node conflict (Harvester's node-down
		// handler's removal of its taint among them, whose retries then
		// back off past the quiesce's minute).
		return
	}
	status, reason := corev1.ConditionTrue, "KubeletReady"
	if !ready {
		status, reason = corev1.ConditionUnknown, "NodeStatusUnknown"
	}
	now := metav1.Now()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: reason, LastHeartbeatTime: now, LastTransitionTime: now}}
	_, _ = env.Kube.CoreV1().Nodes().UpdateStatus(env.Ctx, n, metav1.UpdateOptions{})
}

func (w *fenceWorld) note(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.notes = append(w.notes, fmt.Sprintf(format, args...))
}

// play runs the fencing plan until it ends or stop closes, and plays the
// person who switches a fenced server back on, throughout.
func (w *fenceWorld) play(r *run, stop <-chan struct{}) {
	began := time.Now()
	playSteps(r.env.Ctx, stop, w.plan, func(s fenceStep) time.Duration { return s.Delay }, 100*time.Millisecond,
		func() { w.person(r.env, began) },
		func(s fenceStep) {
			w.note("%6.2fs fence %s %d: %s", time.Since(began).Seconds(), s.Kind, s.Pick, w.do(r.env, s))
		})
}

func (w *fenceWorld) do(env *framework.Env, s fenceStep) string {
	n := w.nodes[s.Pick%len(w.nodes)]
	switch s.Kind {
	case fenceDown:
		kubelet(env, n.name, false)
		w.mu.Lock()
		w.flaps++
		w.mu.Unlock()
		if n.name == w.own() {
			// The controller's own node comes back soon (one that stays
			// NotReady holds every fence, the rest of the run would fence
			// nobody).
			time.AfterFunc(time.Duration(1000+s.Pick)*time.Millisecond, func() { kubelet(env, n.name, true) })
			return n.name + " (the controller's) NotReady for a moment"
		}
		return n.name + " NotReady"
	case fenceUp:
		if n.sim.PowerState() != "On" {
			return n.name + " stays NotReady: its server is " + n.sim.PowerState()
		}
		kubelet(env, n.name, true)
		return n.name + " Ready"
	case fenceAway:
		if err := n.srv.GoAway(); err != nil {
			return err.Error()
		}
		time.AfterFunc(time.Duration(500+s.Pick)*time.Millisecond, func() { _ = n.srv.ComeBack() })
		return "the BMC of " + n.name + " is away for a moment"
	}
	return "unknown step"
}

// person notes which servers are off (only the addon switches one off)
// and switches each back on fenceSwitchOn after it went off; its kubelet
// then comes back.
func (w *fenceWorld) person(env *framework.Env, began time.Time) {
	off := 0
	for _, n := range w.nodes {
		state := n.sim.PowerState()
		if state == "On" {
			continue
		}
		off++
		w.mu.Lock()
		since, known := w.offSince[n.name]
		if !known {
			w.offSince[n.name] = time.Now()
		}
		w.mu.Unlock()
		if !known || state != "Off" || time.Since(since) < fenceSwitchOn {
			continue
		}
		if err := n.sim.SetPowerState("On"); err != nil {
			continue
		}
		kubelet(env, n.name, true)
		w.mu.Lock()
		delete(w.offSince, n.name)
		w.switchedOn[n.name]++
		w.mu.Unlock()
		w.note("%6.2fs fence person: %s switched on, its kubelet Ready", time.Since(began).Seconds(), n.name)
	}
	w.mu.Lock()
	if off > w.mostOff {
		w.mostOff = off
	}
	if off > fenceBound {
		w.findings[fmt.Sprintf("%d servers switched off at once (bound %d)", off, fenceBound)]++
	}
	candidates := w.watchUnfencedLocked(time.Now())
	w.mu.Unlock()
	// The Inventories are read outside the lock, which the watch of the
	// taints takes.
	w.judgeUnfenced(env, candidates)
}

// watchUnfencedLocked follows the spans in which a node carries an
// out-of-service taint while its server is on, and returns those that
// lasted fenceReportWithin while the controller ran and the kube-apiserver
// served it.
func (w *fenceWorld) watchUnfencedLocked(now time.Time) []dueReport {
	var out []dueReport
	for _, n := range w.nodes {
		if !w.anyTainted[n.name] || n.sim.PowerState() != "On" {
			delete(w.unfencedSince, n.name)
			continue
		}
		since, open := w.unfencedSince[n.name]
		if !open {
			w.unfencedSince[n.name] = now
			continue
		}
		start, kill := time.Unix(0, w.marks.start.Load()), time.Unix(0, w.marks.kill.Load())
		if !start.After(kill) {
			// The controller is down: nobody reports meanwhile.
			continue
		}
		away, back := w.marks.apiserverAway()
		if away {
			// Neither is the taint seen nor a report written while the
			// kube-apiserver is away; the span counts from its return.
			continue
		}
		if start.After(since) {
			since = start
		}
		if back.After(since) {
			since = back
		}
		if now.Sub(since) < fenceReportWithin {
			continue
		}
		out = append(out, dueReport{node: n.name, since: since})
		// One judgement a span: the next counts from now.
		w.unfencedSince[n.name] = now
	}
	return out
}

// judgeUnfenced keeps the spans whose node the fencer has not fenced: a
// node it fenced (Fenced True: it saw the server off, and put the taint on
// or found one) whose server a person has switched on since stays fenced
// until its kubelet is back, by design, and is no taint without a fence.
func (w *fenceWorld) judgeUnfenced(env *framework.Env, candidates []dueReport) {
	for _, d := range candidates {
		ctx, cancel := context.WithTimeout(env.Ctx, 2*time.Second)
		inv, err := env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace).Get(ctx, d.node, metav1.GetOptions{})
		cancel()
		if err == nil && conditions.IsTrue(inv.Status.Conditions, equinixv1.BMCFenced) {
			continue
		}
		w.mu.Lock()
		w.dueReports = append(w.dueReports, d)
		w.mu.Unlock()
	}
}

// quiesceFencing ends the fencing chaos: every BMC answers, every server
// the addon switched off is switched on, every kubelet is Ready; then the
// taints must go.
func (r *run) quiesceFencing() string {
	w := r.fencing
	for _, n := range w.nodes {
		_ = n.srv.ComeBack()
	}
	lifted := r.poll(time.Minute, func() bool {
		for _, n := range w.nodes {
			if n.sim.PowerState() == "Off" {
				_ = n.sim.SetPowerState("On")
				w.mu.Lock()
				w.switchedOn[n.name]++
				delete(w.offSince, n.name)
				w.mu.Unlock()
			}
			if n.sim.PowerState() == "On" {
				kubelet(r.env, n.name, true)
			}
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.anyTainted) == 0 && len(w.offSince) == 0
	})
	if !lifted {
		r.violation("fence nodes still tainted out-of-service a minute after every node was back: %v", keys(w.anyTainted))
	}
	return fmt.Sprintf("fence nodes back (taints lifted: %t)", lifted)
}

// checkFencing: the bound and the controller's node, as the watch and the
// person saw them, and one command per step at every BMC.
func (r *run) checkFencing() {
	w := r.fencing
	// etcd is read before the lock: the watch's handler waits on it.
	stored, complete, err := r.storedTaints()
	w.mu.Lock()
	var findings []string
	for f, n := range w.findings {
		findings = append(findings, fmt.Sprintf("%s (seen %d times)", f, n))
	}
	judge, source := w.history, "the watch's resourceVersions"
	switch {
	case err != nil:
		w.storeNote = "etcd's history of the nodes could not be read: " + err.Error()
	case !complete:
		w.storeNote = "etcd's history of the nodes was compacted during the run; every taint it kept: " + stored.trace()
	default:
		judge, source = stored, "etcd's writes"
		w.storeNote = "every taint in etcd: " + stored.trace()
		if stored.differs(w.history) {
			w.storeNote += "; the watch saw otherwise: " + w.history.trace()
		}
	}
	if most, first := judge.held(fenceBound); most > fenceBound {
		findings = append(findings, fmt.Sprintf("%d nodes tainted out-of-service at once (bound %d), in the order of %s: %s; "+
			"every taint the watch saw: %s; %s", most, fenceBound, source, first, w.history.trace(), w.storeNote))
	}
	w.judged = judge
	due := append([]dueReport(nil), w.dueReports...)
	w.mu.Unlock()
	findings = append(findings, r.unreported(due)...)
	sort.Strings(findings)
	for _, f := range findings {
		r.violation("fencing: %s", f)
	}
	for _, n := range w.nodes {
		resets := n.sim.Resets()
		if n.name == w.own() && len(resets) > 0 {
			r.violation("fencing: the BMC of the controller's own node %s got %v", n.name, resets)
		}
		offs := 0
		for _, rt := range resets {
			if rt != "ForceOff" {
				r.violation("fencing: the BMC of %s got a %s (fencing sends only power-offs here)", n.name, rt)
				continue
			}
			offs++
		}
		w.mu.Lock()
		ons := w.switchedOn[n.name]
		w.mu.Unlock()
		if offs > ons+1 {
			r.violation("fencing: the server of %s got %d power-offs but was on only %d time(s): a step sent more than one command",
				n.name, offs, ons+1)
		}
	}
}

// unreported are the due reports no Warning Event FenceTaintedNotFenced
// on the node made (one recorded at the span's start or later). A node
// whose Warning Events from the addon reached the recorder's spam limit
// (25 an object, then one every 5 minutes) is noted, not found at fault.
func (r *run) unreported(due []dueReport) []string {
	var out []string
	for _, d := range due {
		reported, warnings := false, 0
		for _, e := range r.env.Events(d.node) {
			if e.InvolvedObject.Kind != "Node" || e.Source.Component != "harvester-equinix-addon" || e.Type != corev1.EventTypeWarning {
				continue
			}
			warnings += max(1, int(e.Count))
			last := e.LastTimestamp.Time
			if e.EventTime.After(last) {
				last = e.EventTime.Time
			}
			if e.Reason == equinixv1.ReasonFenceTaintedNotFenced && !last.Before(d.since.Add(-time.Second)) {
				reported = true
			}
		}
		switch {
		case reported:
		case warnings >= 25:
			r.fencing.note("node %s was tainted while its server was on from %s and no report of it was recorded, but its %d Warning "+
				"Events reached the recorder's spam limit", d.node, d.since.UTC().Format("15:04:05.000"), warnings)
		default:
			out = append(out, fmt.Sprintf("node %s carried the out-of-service taint while its server was on for %s of the controller's "+
				"running time from %s, and no Warning Event %s said so", d.node, fenceReportWithin, d.since.UTC().Format("15:04:05.000"),
				equinixv1.ReasonFenceTaintedNotFenced))
		}
	}
	return out
}

func (w *fenceWorld) summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	resets := 0
	for _, n := range w.nodes {
		resets += len(n.sim.Resets())
	}
	judged := w.judged
	if judged == nil {
		judged = w.history
	}
	held, _ := judged.held(fenceBound)
	out := fmt.Sprintf("fencing: %d kubelet flaps, %d fences (the addon's taints), %d power-offs, most tainted at once %d (as the watch delivered them: %d), "+
		"most servers off at once %d (bound %d); Harvester's node-down controller tainted %d time(s), %d report(s) of a node tainted while "+
		"its server was on were due", w.flaps, w.taints, resets, held, w.mostTainted, w.mostOff, fenceBound, w.harvesterTaints, len(w.dueReports))
	if w.watchOrder != "" {
		// Not a violation: the apiserver's order above is what counts.
		out += fmt.Sprintf("; the watch delivered more than the bound at once %s, %d change(s) arrived behind a later write; every taint it saw: %s",
			w.watchOrder, w.history.backwards, w.history.trace())
	}
	if w.storeNote != "" {
		out += "; " + w.storeNote
	}
	return out
}

// remove stops the watch and deletes the fencing world's objects.
func (w *fenceWorld) remove(env *framework.Env) {
	close(w.stop)
	for _, n := range w.nodes {
		_ = env.Client.MetalV1alpha1().Inventories(seederv1alpha1.InventoryNamespace).Delete(env.Ctx, n.name, metav1.DeleteOptions{})
		_ = env.Kube.CoreV1().Secrets(bmcSecrets).Delete(env.Ctx, n.name, metav1.DeleteOptions{})
		_ = env.Kube.CoreV1().Nodes().Delete(env.Ctx, n.name, metav1.DeleteOptions{})
	}
}

// fenceNotes are the fencing world's notes, for the run's log.
func (w *fenceWorld) fenceNotes() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Split(strings.Join(w.notes, "\n"), "\n")
}
