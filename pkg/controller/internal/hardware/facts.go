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
	labels, annotations := FactsDiff(f, r.node)
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

// FactsDiff returns the labels and annotations of the facts that node
// lacks or carries otherwise; a nil value removes an annotation.
func FactsDiff(f machine.Facts, node *corev1.Node) (labels, annotations map[string]*string) {
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
