package ownedserver

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/reconcile"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
)

// harness runs the provider's steps as the Instance chain would, without a
// cluster: no status is written, and the chain's own steps are stood in
// for.
type harness struct {
	Provider
}

func (h *harness) newRun(inst *equinixv1.Instance) *run {
	kind := reconcile.Kind[*equinixv1.Instance, equinixv1.InstanceStatus]{
		Name:         "instance",
		Status:       func(i *equinixv1.Instance) *equinixv1.InstanceStatus { return &i.Status },
		Conditions:   func(i *equinixv1.Instance) *[]metav1.Condition { return &i.Status.Conditions },
		EnqueueAfter: func(string, time.Duration) {},
		Recorder:     record.NewFakeRecorder(100),
	}
	return &run{Pass: provision.NewPass(kind, inst, chain{}, nil, time.Second), p: &h.Provider}
}

// chain stands in for the Instance chain's steps.
type chain struct{}

func (chain) TrackNode(*provision.Pass) error { return nil }

func (chain) ConsolePassword(*provision.Pass) (string, bool, error) { return "$6$hash", true, nil }
