package devicehardware

import (
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	hardwarev1 "github.com/harvester/harvester-equinix-addon/pkg/apis/hardware/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/common"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/hardware"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/reconcile"
	"github.com/harvester/harvester-equinix-addon/pkg/machine/metaldriver"
)

// SyncInstance runs the chain for an Instance whose device is known.
func (h *Handler) SyncInstance(key string, inst *equinixv1.Instance) (*equinixv1.Instance, error) {
	if inst == nil {
		h.outbox.Drop(key)
		// An Instance's node bears its name.
		h.steps.ForgetTarget(key, key)
		return nil, nil
	}
	if inst.Status.InstanceID == "" || inst.Status.ProjectID == "" {
		return inst, nil
	}
	if inst.Status.DeviceState == "deleted" {
		// The device is gone; the pool replaces the server.
		return inst, nil
	}
	creds, err := h.credentials.For(inst.Spec.CredentialsSecret)
	if err != nil || creds.ProjectID != inst.Status.ProjectID {
		// The provisioning chain's CredentialsReady says why; the
		// Secret's watch brings the Instance back.
		return inst, nil
	}
	node, err := h.nodes.Cache().Get(inst.Name)
	node = h.written.Latest(node)
	switch {
	case apierrors.IsNotFound(err):
		node = nil
	case err != nil:
		return inst, err
	case !common.OwnedNode(node, inst):
		node = nil
	}
	t := h.newInstanceTarget(inst)
	m := h.metal.Machine(creds, metaldriver.Device{ID: inst.Status.InstanceID, Plan: inst.Spec.Plan})
	return t.Finish(h.steps.SyncThrough(h.outbox, t, m, node, h.clock()))
}

// instanceTarget is an Instance: a server the addon provisioned.
type instanceTarget struct {
	hardware.ObjectPass[*equinixv1.Instance, equinixv1.InstanceStatus]
}

// newInstanceTarget starts a pass over inst. The chain's writes carry
// only what it changed: the provisioning chain keeps the rest.
func (h *Handler) newInstanceTarget(inst *equinixv1.Instance) *instanceTarget {
	kind := reconcile.Kind[*equinixv1.Instance, equinixv1.InstanceStatus]{
		Name:         "Instance",
		Status:       func(i *equinixv1.Instance) *equinixv1.InstanceStatus { return &i.Status },
		Conditions:   func(i *equinixv1.Instance) *[]metav1.Condition { return &i.Status.Conditions },
		UpdateStatus: func(i *equinixv1.Instance) (*equinixv1.Instance, error) { return h.instances.UpdateStatus(i) },
		EnqueueAfter: func(name string, after time.Duration) { h.instances.EnqueueAfter(name, after) },
		Recorder:     h.recorder,
	}
	return &instanceTarget{hardware.ObjectPass[*equinixv1.Instance, equinixv1.InstanceStatus]{Pass: reconcile.NewPass(kind, inst), Kind: "Instance"}}
}

func (t *instanceTarget) PowerSpec() equinixv1.PowerSpec       { return t.Obj.Spec.PowerSpec }
func (t *instanceTarget) Hardware() *hardwarev1.HardwareStatus { return &t.Obj.Status.HardwareStatus }
func (t *instanceTarget) Joined() bool                         { return t.Obj.Status.JoinedAt != nil }
func (t *instanceTarget) ForwardsEvents() bool                 { return true }

// PowerRecheck is the poll interval: the Metal API is built for it.
func (t *instanceTarget) PowerRecheck(poll time.Duration) time.Duration { return poll }
