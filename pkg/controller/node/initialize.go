package node

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

// initRetry paces a node that cannot be initialized yet (no device known,
// refused credentials); its changes bring it back sooner.
const initRetry = time.Minute

// InitializeNode does for a Node waiting for an external cloud provider
// what the Equinix CCM's node initialization does: its addresses from its
// device, its provider ID when it has none, then the uninitialized taint
// removed, so that pods schedule there. Only tainted Nodes are looked at:
// the addresses of a Node a kubelet or another cloud controller owns are
// never touched, and an initialized one costs nothing.
func (h *InitHandler) InitializeNode(_ string, node *corev1.Node) (*corev1.Node, error) {
	if node == nil || node.DeletionTimestamp != nil || !uninitialized(node) {
		return node, nil
	}
	node = h.written.Latest(node)
	if !uninitialized(node) {
		return node, nil
	}
	c, ref, err := h.clientFor(node)
	if err != nil || c == nil {
		return node, err
	}
	m, err := h.matcher.Match(h.ctx, c, node)
	if cerr, ok := conditions.AsError(err); ok {
		return h.notYet(node, cerr.Message)
	}
	if err != nil {
		return node, h.failed(node, "finding its device", ref, err)
	}
	dev, err := c.GetDevice(h.ctx, m.DeviceID)
	if err != nil {
		return node, h.failed(node, "reading device "+m.DeviceID, ref, err)
	}
	addrs, err := ccmAddresses(node.Name, dev, node.Annotations[AnnotationProvidedNodeIP])
	if err != nil {
		return h.notYet(node, fmt.Sprintf("device %s: %v", dev.ID, err))
	}
	if node, err = h.patchStatus(node, addrs); err != nil {
		return node, err
	}
	if node, err = h.untaint(node, equinixv1.ProviderIDPrefix+dev.ID); err != nil {
		return node, err
	}
	common.Eventf(h.recorder, node, equinixv1.ReasonNodeInitialized, "initialized as the Equinix CCM would, from device %s (found by its %s): %s",
		dev.ID, m.By, describe(addrs))
	return node, nil
}

func uninitialized(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == TaintUninitialized {
			return true
		}
	}
	return false
}

// patchStatus replaces the Node's addresses (a merge patch replaces the
// list whole).
func (h *InitHandler) patchStatus(node *corev1.Node, addrs []corev1.NodeAddress) (*corev1.Node, error) {
	raw, err := json.Marshal(map[string]any{"status": map[string]any{"addresses": addrs}})
	if err != nil {
		return node, err
	}
	updated, err := h.nodes.Patch(node.Name, types.MergePatchType, raw, "status")
	if err != nil {
		return node, fmt.Errorf("setting the addresses of node %s: %w", node.Name, err)
	}
	h.written.Wrote(updated)
	return updated, nil
}

// untaint removes the uninitialized taint, and sets the provider ID if the
// kubelet gave none. The patch names the resourceVersion it read: another
// writer of the taints in between makes it fail and the pass run again,
// rather than lose their change.
func (h *InitHandler) untaint(node *corev1.Node, providerID string) (*corev1.Node, error) {
	taints := []corev1.Taint{}
	for _, t := range node.Spec.Taints {
		if t.Key != TaintUninitialized {
			taints = append(taints, t)
		}
	}
	spec := map[string]any{"taints": taints}
	if node.Spec.ProviderID == "" {
		spec["providerID"] = providerID
	}
	raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": node.ResourceVersion}, "spec": spec})
	if err != nil {
		return node, err
	}
	updated, err := h.nodes.Patch(node.Name, types.MergePatchType, raw)
	if err != nil {
		return node, fmt.Errorf("removing the uninitialized taint of node %s: %w", node.Name, err)
	}
	h.written.Wrote(updated)
	return updated, nil
}

// notYet reports a node that cannot be initialized now, once per problem,
// and looks at it again later.
func (h *InitHandler) notYet(node *corev1.Node, why string) (*corev1.Node, error) {
	h.mu.Lock()
	seen := h.reported[node.Name] == why
	h.reported[node.Name] = why
	h.mu.Unlock()
	if !seen {
		common.Eventf(h.recorder, node, equinixv1.ReasonNodeNotInitialized, "the node waits for a cloud provider, and the addon cannot be it yet: %s", why)
	}
	h.nodes.EnqueueAfter(node.Name, initRetry)
	return node, nil
}

// failed turns a failed Metal call into a report (refused credentials, a
// rejected request) or an error for the workqueue to retry.
func (h *InitHandler) failed(node *corev1.Node, step string, ref *equinixv1.SecretReference, err error) error {
	switch failure.ClassOf(err) {
	case failure.Unauthorized, failure.Forbidden:
		_, rerr := h.notYet(node, fmt.Sprintf("Equinix Metal refused the credentials of Secret %s while %s", h.credentials.RefFor(ref), step))
		return rerr
	case failure.NotFound, failure.Invalid:
		_, rerr := h.notYet(node, fmt.Sprintf("%s: %v", step, err))
		return rerr
	}
	return fmt.Errorf("node %s: %s: %w", node.Name, step, err)
}

func describe(addrs []corev1.NodeAddress) string {
	parts := make([]string, 0, len(addrs))
	for _, a := range addrs {
		parts = append(parts, string(a.Type)+" "+a.Address)
	}
	return strings.Join(parts, ", ")
}
