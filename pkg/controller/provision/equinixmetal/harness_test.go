package equinixmetal

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/reconcile"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
	equinixcontrollers "github.com/harvester/harvester-equinix-addon/pkg/generated/controllers/equinix.harvesterhci.io/v1"
)

// harness runs the provider's steps as the Instance chain would, without a
// cluster: statuses go to statuses (a stand-in for the apiserver's), on
// the harness's clock, and the chain's own steps are stood in for.
type harness struct {
	Provider
	statuses equinixcontrollers.InstanceController
	recorder record.EventRecorder
	poll     time.Duration
	// now is the chain's clock (time.Now when nil).
	now func() time.Time
}

func (h *harness) newRun(inst *equinixv1.Instance) *run {
	kind := reconcile.Kind[*equinixv1.Instance, equinixv1.InstanceStatus]{
		Name:         "instance",
		Status:       func(i *equinixv1.Instance) *equinixv1.InstanceStatus { return &i.Status },
		Conditions:   func(i *equinixv1.Instance) *[]metav1.Condition { return &i.Status.Conditions },
		UpdateStatus: func(i *equinixv1.Instance) (*equinixv1.Instance, error) { return h.statuses.UpdateStatus(i) },
		EnqueueAfter: func(string, time.Duration) {},
		Recorder:     h.recorder,
	}
	return &run{Pass: provision.NewPass(kind, inst, chain{}, h.now, h.poll), p: &h.Provider}
}

// chain stands in for the Instance chain's steps: no node yet, and the
// console Secret the Instance's own.
type chain struct{}

func (chain) TrackNode(*provision.Pass) error { return nil }

func (chain) ConsolePassword(p *provision.Pass) (string, bool, error) {
	p.Obj.Status.PasswordSecret = p.Obj.Name + "-console"
	return "$6$hash", true, nil
}
