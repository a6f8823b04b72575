package framework

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// emulateMaintenance plays Harvester's node-drain and maintain controllers for
// the test cluster: a node annotated drain-requested=true is cordoned and
// reported maintain-status=running, then completed (no VMs run here). It also
// records, per node, when maintenance completed.
func (e *Env) emulateMaintenance(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		nodes, err := e.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, n := range nodes.Items {
			if !harvester.MaintenanceRequested(&n) {
				continue
			}
			next := harvester.MaintenanceRunning
			if harvester.MaintenanceStatus(&n) == harvester.MaintenanceRunning {
				next = harvester.MaintenanceCompleted
			} else if harvester.MaintenanceStatus(&n) == harvester.MaintenanceCompleted {
				continue
			}
			patch := `{"spec":{"unschedulable":true},"metadata":{"annotations":{"` + harvester.AnnotationMaintainStatus + `":"` + string(next) + `"}}}`
			// Record the completion before the write that makes it visible, so
			// that nothing reacting to it can seem to come first.
			at := time.Now()
			if _, err := e.Kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err == nil && next == harvester.MaintenanceCompleted {
				e.mu.Lock()
				if e.maintained == nil {
					e.maintained = map[string]time.Time{}
				}
				e.maintained[n.Name] = at
				e.mu.Unlock()
			}
		}
	}
}

// MaintenanceCompletedAt is when the emulator completed maintenance of a node.
func (e *Env) MaintenanceCompletedAt(node string) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.maintained[node]
	return t, ok
}
