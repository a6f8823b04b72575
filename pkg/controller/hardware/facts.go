package hardware

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	hw "github.com/harvester/harvester-equinix-addon/pkg/hardware"
)

// factAnnotations are the annotations the chain owns on a Node: a fact that
// is no longer reported has its annotation removed.
var factAnnotations = []string{v1.AnnotationCPUCount, v1.AnnotationCPUs, v1.AnnotationMemory, v1.AnnotationDrives,
	v1.AnnotationNICs, v1.AnnotationBIOS, v1.AnnotationHardwareSource}

// applyFacts puts the machine's facts on its Node: the manufacturer, model
// and serialNumber labels the Harvester UI's host page reads (made
// label-safe as Seeder makes them; a fact not reported gets no label), and
// the specs as annotations. Only what differs is patched, so a run costs
// nothing once the Node carries them.
func (r *run) applyFacts(f hw.Facts) error {
	if r.node == nil {
		return nil
	}
	labels := map[string]*string{}
	for key, value := range map[string]string{
		v1.LabelManufacturer: hw.LabelValue(f.Manufacturer),
		v1.LabelModel:        hw.LabelValue(f.Model),
		v1.LabelSerialNumber: hw.LabelValue(f.SerialNumber),
	} {
		// A label the provider does not fill may be another tool's: it is
		// left alone, never removed.
		if value != "" && r.node.Labels[key] != value {
			labels[key] = &value
		}
	}
	want := map[string]string{
		v1.AnnotationCPUs:           f.CPUSummary(),
		v1.AnnotationMemory:         f.Memory,
		v1.AnnotationDrives:         f.DriveSummary(),
		v1.AnnotationNICs:           f.NICSummary(),
		v1.AnnotationBIOS:           f.BIOSVersion,
		v1.AnnotationHardwareSource: f.Source,
	}
	if n := f.CPUCount(); n > 0 {
		want[v1.AnnotationCPUCount] = strconv.Itoa(n)
	}
	annotations := map[string]*string{}
	for _, key := range factAnnotations {
		value := strings.TrimSpace(want[key])
		current, has := r.node.Annotations[key]
		switch {
		case value != "" && current != value:
			annotations[key] = &value
		case value == "" && has:
			annotations[key] = nil
		}
	}
	if len(labels) == 0 && len(annotations) == 0 {
		return nil
	}
	patch := map[string]any{"metadata": map[string]any{"labels": labels, "annotations": annotations}}
	raw, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	updated, err := r.h.nodes.Patch(r.node.Name, types.MergePatchType, raw)
	if err != nil {
		return fmt.Errorf("putting the hardware facts on node %s: %w", r.node.Name, err)
	}
	r.node = updated
	return nil
}
