package hardware

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/metaldriver"
)

// factAnnotations are the annotations the chain owns on a Node: a fact that
// is no longer reported has its annotation removed.
var factAnnotations = []string{equinixv1.AnnotationCPUCount, equinixv1.AnnotationCPUs, equinixv1.AnnotationMemory, equinixv1.AnnotationDrives,
	equinixv1.AnnotationNICs, equinixv1.AnnotationBIOS, equinixv1.AnnotationHardwareSource}

// applyFacts puts the machine's facts on its Node: the manufacturer, model
// and serialNumber labels the Harvester UI's host page reads (made
// label-safe as Seeder makes them; a fact not reported gets no label), and
// the specs as annotations. Only what differs is patched, so a run costs
// nothing once the Node carries them.
func (r *run) applyFacts(f machine.Facts) error {
	if r.node == nil {
		return nil
	}
	labels, annotations := factsDiff(f, r.node)
	if len(labels) == 0 && len(annotations) == 0 {
		return nil
	}
	patch := map[string]any{"metadata": map[string]any{"labels": labels, "annotations": annotations}}
	raw, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	updated, err := r.s.nodes.Patch(r.node.Name, types.MergePatchType, raw)
	if err != nil {
		return fmt.Errorf("putting the hardware facts on node %s: %w", r.node.Name, err)
	}
	r.s.written.Wrote(updated)
	r.node = updated
	return nil
}

// factsDiff returns the labels and annotations of the facts that node
// lacks or carries otherwise; a nil value removes an annotation.
func factsDiff(f machine.Facts, node *corev1.Node) (labels, annotations map[string]*string) {
	labels = map[string]*string{}
	for key, value := range map[string]string{
		equinixv1.LabelManufacturer: machine.LabelValue(f.Manufacturer),
		equinixv1.LabelModel:        machine.LabelValue(f.Model),
		equinixv1.LabelSerialNumber: machine.LabelValue(f.SerialNumber),
	} {
		// A label the provider does not fill may be another tool's: it is
		// left alone, never removed.
		if value != "" && node.Labels[key] != value {
			labels[key] = &value
		}
	}
	want := map[string]string{
		equinixv1.AnnotationCPUs:           f.CPUSummary(),
		equinixv1.AnnotationMemory:         f.Memory,
		equinixv1.AnnotationDrives:         f.DriveSummary(),
		equinixv1.AnnotationNICs:           f.NICSummary(),
		equinixv1.AnnotationBIOS:           f.BIOSVersion,
		equinixv1.AnnotationHardwareSource: f.Source,
	}
	if n := f.CPUCount(); n > 0 {
		want[equinixv1.AnnotationCPUCount] = strconv.Itoa(n)
	}
	annotations = map[string]*string{}
	for _, key := range factAnnotations {
		value := strings.TrimSpace(want[key])
		current, has := node.Annotations[key]
		switch {
		case value != "" && current != value:
			annotations[key] = &value
		case value == "" && has:
			annotations[key] = nil
		}
	}
	return labels, annotations
}

// NodeFacts returns the facts of an Instance's machine that its Node
// lacks, for the Node chain to add to the patch it makes when the Node
// appears: one patch per new Node rather than one from each chain. It
// costs no Metal call (the plans list is shared and hourly). ok is false
// when the facts cannot be read now; this chain's own run puts them on
// then.
func (h *Handler) NodeFacts(inst *equinixv1.Instance, node *corev1.Node) (labels, annotations map[string]*string, ok bool) {
	if inst.Status.InstanceID == "" || inst.Status.ProjectID == "" || inst.Status.DeviceState == "deleted" {
		return nil, nil, false
	}
	creds, err := h.credentials.For(inst.Spec.CredentialsSecret)
	if err != nil || creds.ProjectID != inst.Status.ProjectID {
		return nil, nil, false
	}
	facts, err := h.metal.Machine(creds, metaldriver.Device{ID: inst.Status.InstanceID, Plan: inst.Spec.Plan}).Facts(h.ctx)
	if err != nil {
		return nil, nil, false
	}
	labels, annotations = factsDiff(facts, node)
	return labels, annotations, true
}
