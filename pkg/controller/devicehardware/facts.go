package devicehardware

import (
	corev1 "k8s.io/api/core/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/hardware"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/metaldriver"
)

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
	labels, annotations = hardware.FactsDiff(facts, node)
	return labels, annotations, true
}
