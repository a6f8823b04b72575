package instance

import (
	"errors"
	"slices"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// ProvisionInstance drives an Instance through the lifecycle: the provider
// claims or creates its server and boots or installs it, the chain follows
// the node it joins as, the provider keeps the joined server and remediates
// it; then the provider's steps of every pass. One status write stores it
// all.
func (h *Handler) ProvisionInstance(key string, inst *equinixv1.Instance) (*equinixv1.Instance, error) {
	if inst == nil {
		h.provider.Forget(key)
		metrics.ForgetBootSteps(key)
		return nil, nil
	}
	if inst.DeletionTimestamp != nil {
		return inst, nil
	}
	if !h.hasFinalizer(inst) {
		// The remove handler, registered first, adds the finalizer; its update
		// brings us back. No provider call may happen before it is stored.
		return inst, nil
	}
	r := h.newRun(h.latest(inst))
	steps := h.provider.Steps(r.Pass)
	return r.Finish(errors.Join(r.provision(steps), steps.Tend()))
}

// hasFinalizer reports whether the cleanup chain's finalizer is stored.
func (h *Handler) hasFinalizer(inst *equinixv1.Instance) bool {
	return slices.Contains(inst.Finalizers, h.provider.Names().InstanceFinalizer())
}

// provision is the lifecycle up to a joined server, and its upkeep after.
func (r *run) provision(steps provision.Steps) error {
	if r.Obj.Status.Status == "" {
		r.SetPhase(equinixv1.PhasePending)
	}
	if r.Obj.Status.JoinedAt != nil {
		kept, err := steps.Follow()
		if err != nil || !kept {
			return err
		}
		if err := r.TrackNode(); err != nil {
			return err
		}
		if err := steps.Joined(); err != nil {
			return err
		}
		return steps.Remediate()
	}
	booting, err := steps.Provision()
	if err != nil || !booting {
		return err
	}
	if err := r.TrackNode(); err != nil {
		return err
	}
	if r.Obj.Status.JoinedAt == nil {
		return nil
	}
	return steps.Joined()
}
