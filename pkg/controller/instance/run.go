package instance

import (
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/common"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// run is one reconcile of one Instance: a working copy, what changed, and when
// to look again. Steps mutate inst.Status; finish persists it once.
type run struct {
	common.Status
	h    *Handler
	inst *v1.Instance
	// persisted is the status as last written, to skip no-op updates.
	persisted v1.InstanceStatus
	now       func() time.Time
}

func (h *Handler) newRun(inst *v1.Instance) *run {
	now := h.now
	if now == nil {
		now = time.Now
	}
	return &run{Status: common.NewStatus(h.recorder), h: h, inst: inst.DeepCopy(), persisted: *inst.Status.DeepCopy(), now: now}
}

func (r *run) poll() { r.Requeue(r.h.settings.PollInterval) }

// setCondition sets a condition of the Instance (see common.Status).
func (r *run) setCondition(condType string, status metav1.ConditionStatus, reason, message string) {
	r.SetCondition(r.inst, &r.inst.Status.Conditions, r.inst.Generation, condType, status, reason, message)
}

func (r *run) setPhase(phase string) { r.inst.Status.Status = phase }

// persist writes the status now, so that what happened so far (a device ID, an
// install request) survives a crash before the next step.
func (r *run) persist() error {
	r.inst.Status.ObservedGeneration = r.inst.Generation
	reconciling, stalled := harvester.InstanceUIConditions(r.inst.Status)
	conditions.Store(&r.inst.Status.Conditions, r.inst.Generation, reconciling, stalled)
	if equality.Semantic.DeepEqual(r.persisted, r.inst.Status) {
		return nil
	}
	updated, err := r.h.instances.UpdateStatus(r.inst)
	if err != nil {
		return fmt.Errorf("updating status of instance %s: %w", r.inst.Name, err)
	}
	r.h.versions.wrote(r.inst.UID, r.inst.ResourceVersion)
	observeDurations(&r.persisted, &updated.Status)
	r.inst = updated.DeepCopy()
	r.persisted = *updated.Status.DeepCopy()
	return nil
}

// persistOutcome stores the outcome of a call that must not be sent again
// (mutate records it). If another writer of the status came first, the
// outcome is put on the live Instance and written again, rather than lost
// to the conflict and the call repeated on the next pass; what else this
// run changed is recomputed by the rest of it.
func (r *run) persistOutcome(mutate func(*v1.InstanceStatus)) error {
	mutate(&r.inst.Status)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		err := r.persist()
		if !apierrors.IsConflict(err) {
			return err
		}
		live, gerr := r.h.instances.Get(r.inst.Name, metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		r.inst = live.DeepCopy()
		r.persisted = *live.Status.DeepCopy()
		mutate(&r.inst.Status)
		return err
	})
}

// finish persists the status and schedules the next look.
func (r *run) finish(stepErr error) (*v1.Instance, error) {
	if err := r.persist(); err != nil {
		if stepErr != nil {
			logrus.Debugf("instance %s: status not saved after step error %v", r.inst.Name, stepErr)
		}
		return r.inst, err
	}
	if after := r.After(); after > 0 && stepErr == nil {
		r.h.instances.EnqueueAfter(r.inst.Name, after)
	}
	return r.inst, stepErr
}

// observeDurations records the provisioning and join durations once, when the
// status that first carries them is stored (a failed write is retried and
// must not count twice).
func observeDurations(before, after *v1.InstanceStatus) {
	created := after.DeviceCreatedAt
	if created == nil {
		return
	}
	if before.DeviceActiveAt == nil && after.DeviceActiveAt != nil {
		metrics.ProvisionDuration.Observe(after.DeviceActiveAt.Sub(created.Time).Seconds())
	}
	if before.JoinedAt == nil && after.JoinedAt != nil {
		metrics.JoinDuration.Observe(after.JoinedAt.Sub(created.Time).Seconds())
	}
}

func nowTime(r *run) *metav1.Time {
	t := metav1.NewTime(r.now())
	return &t
}
