package elasticip

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/internal/reconcile"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// run is one reconcile of one ElasticIP (see reconcile.Pass): steps change
// r.Obj.Status, and what comes of a move is published once its status is
// stored.
type run struct {
	*reconcile.Pass[*equinixv1.ElasticIP, equinixv1.ElasticIPStatus]
	h   *Handler
	now time.Time
	// onVIPHost is the gauge's value, set once the run knows it; nil
	// drops the series.
	onVIPHost *float64
	// finished is a move completed in this run, counted and recorded as
	// moveEvent once its status is stored.
	finished  *equinixv1.ElasticIPMove
	moveEvent event
}

type event struct{ reason, message string }

func (h *Handler) newRun(eip *equinixv1.ElasticIP) *run {
	r := &run{Pass: reconcile.NewPass(h.kind(), eip), h: h, now: h.now()}
	r.OnStored(r.publish)
	return r
}

// kind is how an ElasticIP's status is stored: every write carries the
// observed generation. A move's intent is stored before its first call.
func (h *Handler) kind() reconcile.Kind[*equinixv1.ElasticIP, equinixv1.ElasticIPStatus] {
	return reconcile.Kind[*equinixv1.ElasticIP, equinixv1.ElasticIPStatus]{
		Name:         "elasticip",
		Status:       func(e *equinixv1.ElasticIP) *equinixv1.ElasticIPStatus { return &e.Status },
		Conditions:   func(e *equinixv1.ElasticIP) *[]metav1.Condition { return &e.Status.Conditions },
		UpdateStatus: func(e *equinixv1.ElasticIP) (*equinixv1.ElasticIP, error) { return h.eips.UpdateStatus(e) },
		EnqueueAfter: func(name string, after time.Duration) { h.eips.EnqueueAfter(name, after) },
		Recorder:     h.recorder,
		Prepare:      func(e *equinixv1.ElasticIP) { e.Status.ObservedGeneration = e.Generation },
	}
}

func (r *run) setPhase(phase string) { r.Obj.Status.Status = phase }

func (r *run) gauge(v float64) { r.onVIPHost = &v }

// waiting says Ready is False for the reason condition cond gives, quietly:
// that condition's own change already made the Event.
func (r *run) waiting(cond string) {
	r.setPhase(equinixv1.ElasticIPPhaseWaiting)
	if c := conditions.Get(r.Obj.Status.Conditions, cond); c != nil && c.Status != metav1.ConditionTrue {
		conditions.False(&r.Obj.Status.Conditions, r.Obj.Generation, equinixv1.ElasticIPReady, c.Reason, c.Message)
	}
}

// publish makes known what the stored status says: the gauge and a finished
// move's metrics and Event (so a failed write, retried, does not count
// twice).
func (r *run) publish(stepErr error) {
	labels := []string{r.Obj.Name, r.Obj.Spec.Address}
	if r.onVIPHost != nil {
		metrics.ElasticIPOnVIPHost.WithLabelValues(labels...).Set(*r.onVIPHost)
	} else if stepErr == nil {
		metrics.ElasticIPOnVIPHost.DeleteLabelValues(labels...)
	}
	if m := r.finished; m != nil {
		metrics.ElasticIPMoves.WithLabelValues(r.Obj.Spec.Address).Inc()
		metrics.ElasticIPMoveDuration.Observe(r.now.Sub(m.Since.Time).Seconds())
		r.Eventf(r.moveEvent.reason, "%s", r.moveEvent.message)
	}
}

// Follow is the chain: find whom kube-vip names, find the address in
// Equinix Metal, and move it there if it is elsewhere.
func (h *Handler) Follow(_ string, eip *equinixv1.ElasticIP) (*equinixv1.ElasticIP, error) {
	if eip == nil || eip.DeletionTimestamp != nil {
		return eip, nil
	}
	if !slices.Contains(eip.Finalizers, Finalizer) {
		// The remove handler stores it first; no call before it is there.
		return eip, nil
	}
	r := h.newRun(eip)
	return r.Finish(r.follow())
}

func (r *run) follow() error {
	if r.Obj.Status.Status == "" {
		r.setPhase(equinixv1.ElasticIPPhasePending)
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
		r.waiting(equinixv1.ElasticIPHostMatched)
		r.Requeue(r.h.settings.Resync)
		return nil
	}
	dev, err := r.match(c, t)
	if err != nil || dev == "" {
		return err
	}
	return r.converge(c, res, current, dev, t.node.Name)
}
