package bgp

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/bgpannotate"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// retry paces a node whose session is too new to have neighbor data, or
// whose calls were throttled.
const retry = 15 * time.Second

// AnnotatePeers keeps one Node's BGP peering annotations in line with its
// device's session. A node at rest (its session seen less than Resync ago)
// costs no call.
func (h *Handler) AnnotatePeers(_ string, node *corev1.Node) (*corev1.Node, error) {
	if node == nil || node.DeletionTimestamp != nil {
		return node, nil
	}
	// Its own last patch may not be cached yet.
	node = h.written.Latest(node)
	if s := h.settings.Nodes; s != nil && !s.Matches(labels.Set(node.Labels)) {
		return h.deselected(node)
	}
	c, err := h.clientFor(node)
	if err != nil || c == nil {
		return node, err
	}
	m, err := h.matcher.Match(h.ctx, c, node)
	if cerr, ok := conditions.AsError(err); ok {
		return h.lost(node, c, cerr.Message)
	}
	if err != nil {
		return node, h.failed(node, "finding its device", err)
	}
	if h.atRest(node, m.DeviceID) {
		return node, nil
	}
	ann, err := h.peering(c, node, m.DeviceID)
	if err != nil || ann == nil {
		return node, err
	}
	h.mu.Lock()
	h.checked[node.Name] = checked{device: m.DeviceID, at: h.now()}
	delete(h.reported, node.Name)
	h.mu.Unlock()
	h.nodes.EnqueueAfter(node.Name, h.settings.Resync)
	return h.write(node, ann, m.DeviceID)
}

// clientFor is the Metal client of the node's server: its Instance's
// credentials for the addon's own nodes, the default Secret's for others.
func (h *Handler) clientFor(node *corev1.Node) (metal.Client, error) {
	var ref *equinixv1.SecretReference
	project := ""
	if name := node.Labels[equinixv1.LabelInstance]; name != "" && name == node.Name {
		if inst, err := h.instances.Get(name); err == nil {
			ref, project = inst.Spec.CredentialsSecret, inst.Status.ProjectID
		}
	}
	creds, err := h.credentials.For(ref)
	if cerr, ok := conditions.AsError(err); ok {
		h.report(node, cerr.Message)
		h.nodes.EnqueueAfter(node.Name, h.settings.Resync)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if project != "" && project != creds.ProjectID {
		h.report(node, fmt.Sprintf("its server is in project %s but Secret %s names project %s", project, h.credentials.RefFor(ref), creds.ProjectID))
		return nil, nil
	}
	c, err := h.metal.Client(creds)
	if err != nil {
		return nil, fmt.Errorf("building the Metal client: %w", err)
	}
	return c, nil
}

func (h *Handler) atRest(node *corev1.Node, device string) bool {
	if node.Annotations[equinixv1.AnnotationBGPDevice] != device {
		return false
	}
	h.mu.Lock()
	last, ok := h.checked[node.Name]
	h.mu.Unlock()
	if !ok || last.device != device {
		return false
	}
	left := h.settings.Resync - h.now().Sub(last.at)
	if left <= 0 {
		return false
	}
	h.nodes.EnqueueAfter(node.Name, left)
	return true
}

// peering makes sure the project has BGP and the device an IPv4 session,
// and returns the annotations its neighbors give. A node already annotated
// for this device whose session is in place needs no more reads: neighbor
// data does not change while the session lives.
func (h *Handler) peering(c metal.Client, node *corev1.Node, device string) (map[string]string, error) {
	if err := h.ensureConfig(c); err != nil {
		return nil, h.failed(node, "enabling BGP on project "+c.ProjectID(), err)
	}
	sessions, err := c.ListBGPSessions(h.ctx, device)
	if metal.IsNotFound(err) {
		h.matcher.Forget(c.ProjectID(), node.Name)
		_, err := h.lost(node, c, fmt.Sprintf("its device %s is gone", device))
		return nil, err
	}
	if err != nil {
		return nil, h.failed(node, "listing the BGP sessions of device "+device, err)
	}
	has := false
	for _, s := range sessions {
		has = has || s.AddressFamily == "ipv4"
	}
	if has && node.Annotations[equinixv1.AnnotationBGPDevice] == device {
		if _, err := bgpannotate.Peers(node.Annotations); err == nil {
			return currentAnnotations(node), nil
		}
	}
	if !has {
		if err := c.CreateBGPSession(h.ctx, device, metal.BGPSessionRequest{AddressFamily: "ipv4"}); err != nil {
			return nil, h.failed(node, "opening an IPv4 BGP session for device "+device, err)
		}
	}
	neighbors, err := c.ListBGPNeighbors(h.ctx, device)
	if err != nil {
		return nil, h.failed(node, "reading the BGP neighbors of device "+device, err)
	}
	d, err := c.GetDevice(h.ctx, device)
	if err != nil {
		return nil, h.failed(node, "reading device "+device, err)
	}
	network, err := bgpannotate.PrivateNetwork(d)
	if err == nil {
		var ann map[string]string
		ann, err = bgpannotate.Annotations(neighbors, network)
		if err == nil {
			return ann, nil
		}
	}
	// The session is new and its neighbor data not complete yet, or the
	// device has no private network (layer 2): look again later.
	h.report(node, fmt.Sprintf("device %s gives no usable BGP peering yet: %v", device, err))
	h.nodes.EnqueueAfter(node.Name, retry)
	return nil, nil
}

// currentAnnotations are the node's own BGP annotations, to compare with.
func currentAnnotations(node *corev1.Node) map[string]string {
	out := map[string]string{}
	for k, v := range node.Annotations {
		if bgpannotate.IsManaged(k) {
			out[k] = v
		}
	}
	return out
}

// ensureConfig requests BGP for the project (local, the configured ASN)
// unless it has a config; a config in any state but disabled serves.
func (h *Handler) ensureConfig(c metal.Client) error {
	project := c.ProjectID()
	h.mu.Lock()
	known := h.enabled[project]
	h.mu.Unlock()
	if known {
		return nil
	}
	cfg, err := c.GetBGPConfig(h.ctx)
	if err != nil {
		return err
	}
	if cfg.ID != "" && !cfg.Enabled() {
		return errors.New("the project's BGP config is disabled; enable it in Equinix Metal")
	}
	if !cfg.Enabled() {
		if err := c.CreateBGPConfig(h.ctx, metal.BGPConfigRequest{ASN: h.settings.LocalASN, DeploymentType: metal.BGPDeploymentLocal}); err != nil {
			return err
		}
		logrus.Infof("requested BGP for Equinix Metal project %s (local, ASN %d)", project, h.settings.LocalASN)
	}
	h.mu.Lock()
	h.enabled[project] = true
	h.mu.Unlock()
	return nil
}

// write patches the annotations in: the desired keys, the marker, and
// nulls for keys of the pattern the node no longer needs.
func (h *Handler) write(node *corev1.Node, ann map[string]string, device string) (*corev1.Node, error) {
	desired := map[string]*string{}
	for k, v := range ann {
		if node.Annotations[k] != v {
			desired[k] = &v
		}
	}
	for _, k := range bgpannotate.Stale(node.Annotations, ann) {
		desired[k] = nil
	}
	fresh := node.Annotations[equinixv1.AnnotationBGPDevice] != device
	if fresh {
		desired[equinixv1.AnnotationBGPDevice] = &device
	}
	if len(desired) == 0 {
		return node, nil
	}
	updated, err := h.patch(node, desired)
	if err != nil {
		return node, err
	}
	if fresh {
		common.Eventf(h.recorder, node, equinixv1.ReasonBGPPeersAnnotated,
			"BGP peering of device %s written to the node's %s annotations (peers from %s)", device, bgpannotate.Prefix, ann[bgpannotate.PeerKey(0, "peer-ip")])
	}
	return updated, nil
}

// lost removes the annotations the addon wrote, when their device or
// session is gone or the node no longer matches a device.
func (h *Handler) lost(node *corev1.Node, c metal.Client, why string) (*corev1.Node, error) {
	if node.Annotations[equinixv1.AnnotationBGPDevice] == "" {
		h.forgetChecked(node.Name)
		h.report(node, why)
		h.nodes.EnqueueAfter(node.Name, h.settings.Resync)
		return node, nil
	}
	updated, err := h.removeOwn(node, why)
	if err != nil {
		return node, err
	}
	h.matcher.Forget(c.ProjectID(), node.Name)
	return updated, nil
}

// deselected: a node the selector leaves out peers no more. The
// annotations the addon wrote go, so that no speaker on it peers from
// them; its session, if any, is left, as every session is.
func (h *Handler) deselected(node *corev1.Node) (*corev1.Node, error) {
	h.forgetChecked(node.Name)
	h.mu.Lock()
	delete(h.reported, node.Name)
	h.mu.Unlock()
	if node.Annotations[equinixv1.AnnotationBGPDevice] == "" {
		return node, nil
	}
	return h.removeOwn(node, "the node does not match --bgp-node-selector")
}

// removeOwn removes the annotations the addon wrote and says so.
func (h *Handler) removeOwn(node *corev1.Node, why string) (*corev1.Node, error) {
	h.forgetChecked(node.Name)
	was := node.Annotations[equinixv1.AnnotationBGPDevice]
	remove := map[string]*string{equinixv1.AnnotationBGPDevice: nil}
	for k := range node.Annotations {
		if bgpannotate.IsManaged(k) {
			remove[k] = nil
		}
	}
	updated, err := h.patch(node, remove)
	if err != nil {
		return node, err
	}
	common.Eventf(h.recorder, node, equinixv1.ReasonBGPPeersRemoved, "BGP peering annotations of device %s removed: %s", was, why)
	return updated, nil
}

func (h *Handler) forgetChecked(name string) {
	h.mu.Lock()
	delete(h.checked, name)
	h.mu.Unlock()
}

func (h *Handler) patch(node *corev1.Node, annotations map[string]*string) (*corev1.Node, error) {
	raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return nil, err
	}
	// A merge patch of annotations only: no conflict with the kubelet.
	updated, err := h.nodes.Patch(node.Name, types.MergePatchType, raw)
	if err != nil {
		return nil, fmt.Errorf("annotating node %s: %w", node.Name, err)
	}
	h.written.Wrote(updated)
	return updated, nil
}

// failed reports a Metal failure on the node once and returns what the
// workqueue should retry: refused credentials and rejected requests wait
// for the resync; the rest backs off.
func (h *Handler) failed(node *corev1.Node, step string, err error) error {
	switch failure.ClassOf(err) {
	case failure.Unauthorized, failure.Forbidden, failure.Invalid, failure.NoCapacity:
		h.report(node, fmt.Sprintf("%s: %v", step, err))
		h.nodes.EnqueueAfter(node.Name, h.settings.Resync)
		return nil
	case failure.Throttled, failure.Busy:
		h.nodes.EnqueueAfter(node.Name, retry)
		return nil
	}
	var merr *failure.Error
	if !errors.As(err, &merr) {
		h.report(node, fmt.Sprintf("%s: %v", step, err))
		h.nodes.EnqueueAfter(node.Name, h.settings.Resync)
		return nil
	}
	return fmt.Errorf("node %s: %s: %w", node.Name, step, err)
}

// report records a Warning Event on the node once per problem.
func (h *Handler) report(node *corev1.Node, msg string) {
	h.mu.Lock()
	seen := h.reported[node.Name] == msg
	h.reported[node.Name] = msg
	h.mu.Unlock()
	if !seen {
		common.Eventf(h.recorder, node, equinixv1.ReasonBGPFailed, "no BGP peering for this node: %s", msg)
	}
}
