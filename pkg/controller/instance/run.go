package instance

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/reconcile"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/provision"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// run is one reconcile of one Instance (see provision.Pass): the chain's
// steps and the provider's change r.Obj.Status, and Finish stores it once.
type run struct {
	*provision.Pass
	h *Handler
}

func (h *Handler) newRun(inst *equinixv1.Instance) *run {
	return &run{Pass: provision.NewPass(h.kind(), inst, h, h.now, h.settings.PollInterval), h: h}
}

// kind is how an Instance's status is stored. Every write carries the
// observed generation, the conditions the Harvester UI reads and what the
// provider derives; each written object is kept for the next pass (see
// latest), and the durations it records for the first time are observed.
func (h *Handler) kind() reconcile.Kind[*equinixv1.Instance, equinixv1.InstanceStatus] {
	return reconcile.Kind[*equinixv1.Instance, equinixv1.InstanceStatus]{
		Name:       "instance",
		Status:     func(i *equinixv1.Instance) *equinixv1.InstanceStatus { return &i.Status },
		Conditions: func(i *equinixv1.Instance) *[]metav1.Condition { return &i.Status.Conditions },
		UpdateStatus: func(i *equinixv1.Instance) (*equinixv1.Instance, error) {
			updated, err := h.instances.UpdateStatus(i)
			if err == nil {
				h.written.Wrote(updated)
			}
			return updated, err
		},
		EnqueueAfter: func(name string, after time.Duration) { h.instances.EnqueueAfter(name, after) },
		Recorder:     h.recorder,
		Prepare: func(i *equinixv1.Instance) {
			i.Status.ObservedGeneration = i.Generation
			h.provider.Prepare(&i.Status)
			reconciling, stalled := harvester.InstanceUIConditions(i.Status)
			conditions.Store(&i.Status.Conditions, i.Generation, reconciling, stalled)
		},
		Wrote: func(stored *equinixv1.InstanceStatus, written *equinixv1.Instance) {
			observeDurations(stored, &written.Status)
		},
	}
}

// latest is inst, or this process's own later write of it. The informer
// cache delivers a write some time after it was made, and a pass that starts
// in between (a requeue, a Node's change, the watch event of an intent the
// pass before wrote on its way) would see the status as it was before: send
// again a port call whose conversion the write recorded as under way (port
// calls are not idempotent), read the device and its events to learn whether
// the reinstall it just sent went out, or write a status that can only
// conflict. The chain is the one writer of an Instance's status, so its own
// writes are the only ones the cache can lag behind in it.
func (h *Handler) latest(inst *equinixv1.Instance) *equinixv1.Instance {
	return h.written.Latest(inst)
}

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
