package joinagent

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Harvester's node annotations for maintenance mode (harvester.md §6). The
// agent keeps its own copy rather than import the addon's: it plays the
// other side and must not share the addon's mistakes.
const (
	annotationDrainRequested = "harvesterhci.io/drain-requested"
	annotationMaintainStatus = "harvesterhci.io/maintain-status"
)

// EmulateMaintenance plays Harvester's node-drain and maintain controllers
// until ctx ends: a node annotated drain-requested=true is cordoned and
// reported maintain-status=running, then completed on the next pass (no VM
// runs on a simulated node). Without it, nothing would ever complete the
// maintenance the addon requests before removing a server.
func (a *Agent) EmulateMaintenance(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a.maintenancePass(ctx)
	}
}

// maintenancePass moves every node whose drain was requested one step on.
func (a *Agent) maintenancePass(ctx context.Context) {
	nodes, err := a.opts.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, n := range nodes.Items {
		if n.Annotations[annotationDrainRequested] != "true" {
			continue
		}
		next := "running"
		switch n.Annotations[annotationMaintainStatus] {
		case "running":
			next = "completed"
		case "completed":
			continue
		}
		patch := `{"spec":{"unschedulable":true},"metadata":{"annotations":{"` + annotationMaintainStatus + `":"` + next + `"}}}`
		// Record the completion before the write that makes it visible, so
		// that nothing reacting to it can seem to come first.
		at := time.Now()
		_, err := a.opts.Kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err == nil && next == "completed" {
			a.mu.Lock()
			if a.maintained == nil {
				a.maintained = map[string]time.Time{}
			}
			a.maintained[n.Name] = at
			a.mu.Unlock()
		}
	}
}

// MaintenanceCompletedAt is when EmulateMaintenance completed a node's maintenance.
func (a *Agent) MaintenanceCompletedAt(node string) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.maintained[node]
	return t, ok
}
