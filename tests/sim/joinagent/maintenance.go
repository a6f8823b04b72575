package joinagent

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// Harvester's node annotations for maintenance mode. The
// agent keeps its own copy rather than import the addon's: it plays the
// other side and must not share the addon's mistakes.
const (
	annotationDrainRequested = "harvesterhci.io/drain-requested"
	annotationDrainForced    = "harvesterhci.io/drain-forced"
	annotationMaintainStatus = "harvesterhci.io/maintain-status"
)

// maintenance follows the Nodes through a watch and keeps the names of
// those whose drain was requested and is not complete, so a pass touches
// only them instead of listing every Node.
type maintenance struct {
	mu      sync.Mutex
	pending map[string]maintainStep
}

// maintainStep is the next maintain-status a node is to report.
type maintainStep string

// stepOf says what a node needs next, or "" when nothing. As Harvester's
// node-drain controller does, a drain request starts maintenance (again,
// if it was completed) and is taken off the node as it does; a running
// maintenance completes on the next pass.
func stepOf(n *corev1.Node) maintainStep {
	switch {
	case n.Annotations[annotationDrainRequested] == "true":
		return "running"
	case n.Annotations[annotationMaintainStatus] == "running":
		return "completed"
	default:
		return ""
	}
}

// stepPatch is the merge patch that takes a node to step: cordoned and
// running, the request removed; then completed.
func stepPatch(step maintainStep) string {
	if step == "running" {
		return `{"spec":{"unschedulable":true},"metadata":{"annotations":{"` + annotationMaintainStatus + `":"running","` +
			annotationDrainRequested + `":null,"` + annotationDrainForced + `":null}}}`
	}
	return `{"metadata":{"annotations":{"` + annotationMaintainStatus + `":"` + string(step) + `"}}}`
}

func (m *maintenance) observe(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if step := stepOf(n); step != "" {
		m.pending[n.Name] = step
	} else {
		delete(m.pending, n.Name)
	}
}

func (m *maintenance) forget(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if n, ok := obj.(*corev1.Node); ok {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.pending, n.Name)
	}
}

func (m *maintenance) snapshot() map[string]maintainStep {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]maintainStep, len(m.pending))
	for k, v := range m.pending {
		out[k] = v
	}
	return out
}

// EmulateMaintenance plays Harvester's node-drain and maintain controllers
// until ctx ends: a node annotated drain-requested=true is cordoned and
// reported maintain-status=running, then completed on the next pass (no VM
// runs on a simulated node). Without it, nothing would ever complete the
// maintenance the addon requests before removing a server.
func (a *Agent) EmulateMaintenance(ctx context.Context, interval time.Duration) {
	m := a.watchMaintenance(ctx)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a.maintenancePass(ctx, m)
	}
}

// watchMaintenance starts the Node watch and returns once it has synced.
func (a *Agent) watchMaintenance(ctx context.Context) *maintenance {
	m := &maintenance{pending: map[string]maintainStep{}}
	factory := informers.NewSharedInformerFactory(a.opts.Kube, 0)
	inf := factory.Core().V1().Nodes().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    m.observe,
		UpdateFunc: func(_, n any) { m.observe(n) },
		DeleteFunc: m.forget,
	}); err != nil {
		a.opts.Log.Warnf("maintenance emulation: watching nodes: %v", err)
	}
	factory.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	return m
}

// maintenancePass moves every node whose drain was requested one step on.
// The watch updates the pending set once the patch lands; until then a
// node may be patched to the same step again, which changes nothing.
func (a *Agent) maintenancePass(ctx context.Context, m *maintenance) {
	for name, step := range m.snapshot() {
		// The completion is recorded before the write that makes it
		// visible: whoever sees the node completed (the addon, a test) must
		// find it in MaintenanceCompletedAt, and nothing reacting to it can
		// seem to come first. A write that fails takes it back.
		first := step == "completed" && a.recordMaintained(name, time.Now())
		node, err := a.opts.Kube.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(stepPatch(step)), metav1.PatchOptions{})
		if err != nil && first {
			a.forgetMaintained(name)
		}
		if err == nil {
			a.observeMaintenance(node)
		}
	}
}

// ObserveMaintenance has fn called with every Node the maintenance
// emulation writes, as the apiserver answered the write: a test that judges
// what happened in maintenance mode knows it from then on, where its own
// watch may trail (it relists with a backoff after an apiserver restart).
func (a *Agent) ObserveMaintenance(fn func(*corev1.Node)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.maintenanceWritten = fn
}

func (a *Agent) observeMaintenance(node *corev1.Node) {
	a.mu.Lock()
	fn := a.maintenanceWritten
	a.mu.Unlock()
	if fn != nil {
		fn(node)
	}
}

// recordMaintained notes when a node's maintenance first completed, and
// reports whether this was the first time.
func (a *Agent) recordMaintained(node string, at time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, done := a.maintained[node]; done {
		return false
	}
	if a.maintained == nil {
		a.maintained = map[string]time.Time{}
	}
	a.maintained[node] = at
	return true
}

func (a *Agent) forgetMaintained(node string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.maintained, node)
}

// MaintenanceCompletedAt is when EmulateMaintenance completed a node's maintenance.
func (a *Agent) MaintenanceCompletedAt(node string) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.maintained[node]
	return t, ok
}
