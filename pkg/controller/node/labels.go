package node

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
)

// LabelNode adds the device's labels and annotations to the Node of one of
// the addon's servers. Nodes without the instance label are left untouched.
func (h *Handler) LabelNode(_ string, node *corev1.Node) (*corev1.Node, error) {
	if node == nil || node.DeletionTimestamp != nil || node.Labels[equinixv1.LabelInstance] == "" {
		return node, nil
	}
	inst, err := h.instances.Get(node.Labels[equinixv1.LabelInstance])
	if apierrors.IsNotFound(err) {
		return node, nil
	}
	if err != nil {
		return node, fmt.Errorf("reading instance of node %s: %w", node.Name, err)
	}
	if !common.OwnedNode(node, inst) || inst.Status.InstanceID == "" {
		return node, nil
	}
	// What this chain or another wrote a moment ago may not be cached yet.
	node = h.written.Latest(node)
	labels, annotations := metadata(inst)
	patch := missing(node, labels, annotations, equinixv1.ProviderIDPrefix+inst.Status.InstanceID)
	if patch != nil && h.facts != nil {
		// Only along with a patch made anyway: the hardware chain keeps
		// the facts current on its own.
		if fl, fa, ok := h.facts.NodeFacts(inst, node); ok {
			patch.add(fl, fa)
		}
	}
	if patch == nil {
		return node, nil
	}
	raw, err := json.Marshal(patch)
	if err != nil {
		return node, err
	}
	// A merge patch: no conflict with the kubelet's status updates, and
	// nothing else on the Node is rewritten. The provider ID it may carry
	// cannot overwrite one the kubelet set meanwhile: the apiserver lets a
	// Node's providerID change only from empty.
	updated, err := h.nodes.Patch(node.Name, types.MergePatchType, raw)
	if err != nil {
		return node, fmt.Errorf("labelling node %s: %w", node.Name, err)
	}
	h.written.Wrote(updated)
	return updated, nil
}

// metadata is what the Node of an Instance carries: well-known topology and
// instance-type labels (as a cloud provider would set them; the zone once the
// device's facility is known), the device ID as a label for selectors, and
// annotations for people.
func metadata(inst *equinixv1.Instance) (labels, annotations map[string]string) {
	metro := strings.ToLower(inst.Spec.Metro)
	labels = map[string]string{
		equinixv1.LabelPool:         inst.Spec.PoolName,
		equinixv1.LabelDeviceID:     inst.Status.InstanceID,
		equinixv1.LabelInstanceType: inst.Spec.Plan,
		equinixv1.LabelRegion:       metro,
	}
	if inst.Status.Facility != "" {
		labels[equinixv1.LabelZone] = inst.Status.Facility
	}
	annotations = map[string]string{
		equinixv1.AnnotationProviderID:   equinixv1.ProviderIDPrefix + inst.Status.InstanceID,
		equinixv1.AnnotationPlan:         inst.Spec.Plan,
		equinixv1.AnnotationMetro:        metro,
		equinixv1.AnnotationBillingCycle: inst.Spec.BillingCycle,
	}
	return labels, annotations
}

// nodePatch is a merge patch of a Node; a nil value removes the key.
type nodePatch struct {
	Metadata struct {
		Labels      map[string]*string `json:"labels,omitempty"`
		Annotations map[string]*string `json:"annotations,omitempty"`
	} `json:"metadata"`
	Spec *providerIDPatch `json:"spec,omitempty"`
}

type providerIDPatch struct {
	ProviderID string `json:"providerID"`
}

// missing returns a patch of the labels and annotations that differ, and of
// the provider ID when the Node has none (one set by the kubelet or a cloud
// controller is never replaced), or nil.
func missing(node *corev1.Node, labels, annotations map[string]string, providerID string) *nodePatch {
	p := &nodePatch{}
	if node.Spec.ProviderID == "" {
		p.Spec = &providerIDPatch{ProviderID: providerID}
	}
	p.Metadata.Labels = differing(node.Labels, labels)
	p.Metadata.Annotations = differing(node.Annotations, annotations)
	if p.Metadata.Labels == nil && p.Metadata.Annotations == nil && p.Spec == nil {
		return nil
	}
	return p
}

// differing returns the entries of want that have lacks or holds otherwise,
// or nil.
func differing(have, want map[string]string) map[string]*string {
	var out map[string]*string
	for k, v := range want {
		if have[k] != v {
			if out == nil {
				out = map[string]*string{}
			}
			out[k] = &v
		}
	}
	return out
}

// add merges more labels and annotations into the patch.
func (p *nodePatch) add(labels, annotations map[string]*string) {
	p.Metadata.Labels = merged(p.Metadata.Labels, labels)
	p.Metadata.Annotations = merged(p.Metadata.Annotations, annotations)
}

func merged(into, more map[string]*string) map[string]*string {
	for k, v := range more {
		if into == nil {
			into = map[string]*string{}
		}
		into[k] = v
	}
	return into
}
