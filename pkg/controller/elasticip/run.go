package elasticip

import (
	"fmt"
	"slices"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/common"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// run is one reconcile of one ElasticIP: a working copy, and what to do
// once its status is stored.
type run struct {
	common.Status
	h   *Handler
	eip *v1.ElasticIP
	// persisted is the status as last written, to skip no-op updates.
	persisted v1.ElasticIPStatus
	now       time.Time
	// onVIPHost is the gauge's value, set once the run knows it; nil
	// drops the series.
	onVIPHost *float64
	// finished is a move completed in this run, counted and told (told is
	// its Event) once its status is stored.
	finished *v1.ElasticIPMove
	told     event
}

type event struct{ reason, message string }

func (h *Handler) newRun(eip *v1.ElasticIP) *run {
	return &run{Status: common.NewStatus(h.recorder), h: h, eip: eip.DeepCopy(),
		persisted: *eip.Status.DeepCopy(), now: h.now()}
}

func (r *run) setCondition(condType string, status metav1.ConditionStatus, reason, message string) {
	r.SetCondition(r.eip, &r.eip.Status.Conditions, r.eip.Generation, condType, status, reason, message)
}

func (r *run) setPhase(phase string) { r.eip.Status.Status = phase }

func (r *run) gauge(v float64) { r.onVIPHost = &v }

// waiting says Ready is False for the reason condition cond gives, quietly:
// that condition's own change already made the Event.
func (r *run) waiting(cond string) {
	r.setPhase(v1.ElasticIPPhaseWaiting)
	if c := conditions.Get(r.eip.Status.Conditions, cond); c != nil && c.Status != metav1.ConditionTrue {
		conditions.False(&r.eip.Status.Conditions, r.eip.Generation, v1.ElasticIPReady, c.Reason, c.Message)
	}
}

// persist writes the status now: a move's intent must be stored before the
// first call of the move.
func (r *run) persist() error {
	r.eip.Status.ObservedGeneration = r.eip.Generation
	if equality.Semantic.DeepEqual(r.persisted, r.eip.Status) {
		return nil
	}
	updated, err := r.h.eips.UpdateStatus(r.eip)
	if err != nil {
		return fmt.Errorf("updating status of elasticip %s: %w", r.eip.Name, err)
	}
	r.eip = updated.DeepCopy()
	r.persisted = *updated.Status.DeepCopy()
	return nil
}

// finish stores the status, then publishes what it says: the gauge and a
// finished move's metrics (so a failed write, retried, does not count
// twice), and schedules the next look.
func (r *run) finish(stepErr error) (*v1.ElasticIP, error) {
	if err := r.persist(); err != nil {
		if stepErr != nil {
			logrus.Debugf("elasticip %s: status not saved after step error %v", r.eip.Name, stepErr)
		}
		return r.eip, err
	}
	labels := []string{r.eip.Name, r.eip.Spec.Address}
	if r.onVIPHost != nil {
		metrics.ElasticIPOnVIPHost.WithLabelValues(labels...).Set(*r.onVIPHost)
	} else if stepErr == nil {
		metrics.ElasticIPOnVIPHost.DeleteLabelValues(labels...)
	}
	if m := r.finished; m != nil {
		metrics.ElasticIPMoves.WithLabelValues(r.eip.Spec.Address).Inc()
		metrics.ElasticIPMoveDuration.Observe(r.now.Sub(m.Since.Time).Seconds())
		r.Eventf(r.eip, r.told.reason, "%s", r.told.message)
	}
	if after := r.After(); after > 0 && stepErr == nil {
		r.h.eips.EnqueueAfter(r.eip.Name, after)
	}
	return r.eip, stepErr
}

// Follow is the chain: find whom kube-vip names, find the address in
// Equinix Metal, and move it there if it is elsewhere.
func (h *Handler) Follow(_ string, eip *v1.ElasticIP) (*v1.ElasticIP, error) {
	if eip == nil || eip.DeletionTimestamp != nil {
		return eip, nil
	}
	if !slices.Contains(eip.Finalizers, Finalizer) {
		// The remove handler stores it first; no call before it is there.
		return eip, nil
	}
	r := h.newRun(eip)
	return r.finish(r.follow())
}

func (r *run) follow() error {
	if r.eip.Status.Status == "" {
		r.setPhase(v1.ElasticIPPhasePending)
	}
	if conflict, err := r.conflict(); err != nil || conflict {
		return err
	}
	t := r.target()
	c, err := r.client()
	if err != nil || c == nil {
		return err
	}
	if r.atRest(t) {
		return nil
	}
	res, err := r.reservation(c)
	if err != nil || res == nil {
		return err
	}
	current := r.record(res)
	if t.node == nil {
		// Nothing to follow: the address stays where it is.
		r.waiting(v1.ElasticIPHostMatched)
		r.Requeue(r.h.settings.Resync)
		return nil
	}
	dev, err := r.match(c, t)
	if err != nil || dev == "" {
		return err
	}
	return r.converge(c, res, current, dev, t.node.Name)
}
