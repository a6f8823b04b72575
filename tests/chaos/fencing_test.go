package chaos

import (
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

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
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
// kubelet comes back. Invariants: never more fenced than the bound (nodes
// tainted out-of-service, servers off, at any moment), never the
// controller's node (no taint, no command to its BMC), one command per step
// (a server gets at most one power-off per time it was on, and no other
// command), and every taint lifted once the nodes are back.
const (
	fenceNodes = 4
	fenceBound = 1
	fenceGrace = 2 * time.Second
	// fenceSwitchOn is how long the person takes to switch a server the
	// addon switched off back on.
	fenceSwitchOn = 1500 * time.Millisecond
	fenceStepsMin = 10
	fenceStepsMax = 8
)

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

type fenceNode struct {
	name string
	sim  *bmcsim.BMC
	srv  *bmcsim.Server
}

type fenceWorld struct {
	nodes []fenceNode
	plan  []fenceStep
	stop  chan struct{}

	mu    sync.Mutex
	notes []string
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
func startFencing(t *testing.T, env *framework.Env, seed int64) *fenceWorld {
	t.Helper()
	w := &fenceWorld{plan: newFencePlan(seed), stop: make(chan struct{}), tainted: map[string]bool{}, history: newTaintHistory(),
		offSince: map[string]time.Time{}, switchedOn: map[string]int{}, findings: map[string]int{}}
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
		w.observeTaint(n.Name, outOfService(n), rv, time.Now())
	}
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, obj any) { seen(obj) }})
	factory.Start(w.stop)
}

func outOfService(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeOutOfService {
			return true
		}
	}
	return false
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
	defer w.mu.Unlock()
	if off > w.mostOff {
		w.mostOff = off
	}
	if off > fenceBound {
		w.findings[fmt.Sprintf("%d servers switched off at once (bound %d)", off, fenceBound)]++
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
		return len(w.tainted) == 0 && len(w.offSince) == 0
	})
	if !lifted {
		r.violation("fence nodes still tainted out-of-service a minute after every node was back: %v", keys(w.tainted))
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
	w.mu.Unlock()
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
	out := fmt.Sprintf("fencing: %d kubelet flaps, %d fences (taints), %d power-offs, most tainted at once %d (as the watch delivered them: %d), "+
		"most servers off at once %d (bound %d)", w.flaps, w.taints, resets, held, w.mostTainted, w.mostOff, fenceBound)
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
