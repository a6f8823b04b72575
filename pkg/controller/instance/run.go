package instance

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/reconcile"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// run is one reconcile of one Instance (see reconcile.Pass): steps change
// r.Obj.Status, and Finish stores it once.
type run struct {
	*reconcile.Pass[*equinixv1.Instance, equinixv1.InstanceStatus]
	h   *Handler
	now func() time.Time
}

func (h *Handler) newRun(inst *equinixv1.Instance) *run {
	now := h.now
	if now == nil {
		now = time.Now
	}
	return &run{Pass: reconcile.NewPass(h.kind(), inst), h: h, now: now}
}

// kind is how an Instance's status is stored. Every write carries the
// observed generation and the conditions the Harvester UI reads; each
// write's replaced version is remembered (see versions), and the durations
// it records for the first time are observed.
func (h *Handler) kind() reconcile.Kind[*equinixv1.Instance, equinixv1.InstanceStatus] {
	return reconcile.Kind[*equinixv1.Instance, equinixv1.InstanceStatus]{
		Name:       "instance",
		Status:     func(i *equinixv1.Instance) *equinixv1.InstanceStatus { return &i.Status },
		Conditions: func(i *equinixv1.Instance) *[]metav1.Condition { return &i.Status.Conditions },
		UpdateStatus: func(i *equinixv1.Instance) (*equinixv1.Instance, error) {
			from := i.ResourceVersion
			updated, err := h.instances.UpdateStatus(i)
			if err == nil {
				h.versions.wrote(i.UID, from)
			}
			return updated, err
		},
		EnqueueAfter: func(name string, after time.Duration) { h.instances.EnqueueAfter(name, after) },
		Recorder:     h.recorder,
		Prepare: func(i *equinixv1.Instance) {
			i.Status.ObservedGeneration = i.Generation
			if !i.Spec.Owned() {
				// The Server column names the device.
				i.Status.Server = i.Status.InstanceID
			}
			reconciling, stalled := harvester.InstanceUIConditions(i.Status)
			conditions.Store(&i.Status.Conditions, i.Generation, reconciling, stalled)
		},
		Wrote: func(stored *equinixv1.InstanceStatus, written *equinixv1.Instance) {
			observeDurations(stored, &written.Status)
		},
		Get: func(name string) (*equinixv1.Instance, error) { return h.instances.Get(name, metav1.GetOptions{}) },
	}
}

func (r *run) poll() { r.Requeue(r.h.settings.PollInterval) }

func (r *run) setPhase(phase string) { r.Obj.Status.Status = phase }

// observeDurations records the provisioning and join durations once, when the
// status that first carries them is stored (a failed write is retried and
// must not count twice).
func observeDurations(before, after *equinixv1.InstanceStatus) {
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
