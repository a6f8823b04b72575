package fencing

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// outOfService is the taint of a fenced node.
func outOfService() corev1.Taint {
	return corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: equinixv1.TaintOutOfServiceValue, Effect: corev1.TaintEffectNoExecute}
}

// withTaint is taints with the out-of-service taint put on (on) or taken
// off, and whether that changed anything. Only the taint of this key and
// effect is touched: the node lifecycle controller's own stay.
func withTaint(taints []corev1.Taint, on bool) ([]corev1.Taint, bool) {
	want := outOfService()
	out := make([]corev1.Taint, 0, len(taints)+1)
	found := false
	for _, t := range taints {
		if t.Key == want.Key && t.Effect == want.Effect {
			found = true
			if !on {
				continue
			}
		}
		out = append(out, t)
	}
	switch {
	case on && !found:
		now := metav1.Now()
		want.TimeAdded = &now
		return append(out, want), true
	case !on && found:
		return out, true
	}
	return taints, false
}

// carriesTaint says whether the node carries the out-of-service taint.
func carriesTaint(node *corev1.Node) bool {
	want := outOfService()
	for _, t := range node.Spec.Taints {
		if t.Key == want.Key && t.Effect == want.Effect {
			return true
		}
	}
	return false
}

// setTaint puts the out-of-service taint on the node or takes it off. The
// node is read from the API server and patched only if it did not change
// in between (a JSON patch that tests its resourceVersion): taints are a
// list, and another writer's taint must not be lost.
func (f *Fencer) setTaint(name string, on bool) error {
	node, err := f.liveNodes.Nodes().Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading node %s: %w", name, err)
	}
	taints, changed := withTaint(node.Spec.Taints, on)
	if !changed {
		return nil
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": node.ResourceVersion},
		{"op": "add", "path": "/spec/taints", "value": taints},
	})
	if err != nil {
		return fmt.Errorf("taint patch of node %s: %w", name, err)
	}
	patched, err := f.liveNodes.Nodes().Patch(f.ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("tainting node %s out-of-service (%t): %w", name, on, err)
	}
	f.nodeWrites.Wrote(patched)
	return nil
}

// attached counts the volumes the node's status still lists as attached
// (the attach-detach controller keeps node.status.volumesAttached).
func attached(node *corev1.Node) int { return len(node.Status.VolumesAttached) }
