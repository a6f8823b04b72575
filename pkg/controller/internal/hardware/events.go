package hardware

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// Events of cluster-scoped objects live in "default", as the recorder puts
// them, and those of namespaced objects in the object's namespace, where the
// apiserver requires them; the source is the addon's, as for its other
// Events.
const (
	eventComponent = "harvester-equinix-addon"
	// maxMessage bounds an Event's message (the API keeps at most 1 KiB).
	maxMessage = 1024
)

// forwardEvents turns the machine's new events into Kubernetes Events on
// the Node (on the target while there is none) and moves the cursor past
// each one forwarded. Each Event's name is derived from the machine
// event's ID, so an event forwarded before a crash that kept the cursor
// from being saved is found to exist rather than sent twice. An Instance's
// events go through the outbox, which the next run asks what it wrote; a
// BMC's, a few per poll, are written here.
func (r *run) forwardEvents() error {
	if r.outbox != nil {
		for _, e := range r.outbox.written(r.Name()) {
			r.forwarded(e)
		}
	}
	batch, err := r.machine.Events(r.s.ctx, r.Hardware().EventCursor)
	if err != nil {
		return fmt.Errorf("reading the machine's events: %w", err)
	}
	if batch.RecheckAfter > 0 {
		r.Requeue(batch.RecheckAfter)
	}
	if !r.ForwardsEvents() {
		for _, e := range batch.Events {
			r.forwarded(pendingEvent{ev: e})
		}
		return nil
	}
	involved := &involvedObject{owner: r.Name(), ref: r.involvedObjectRef(), at: r.now}
	pending := make([]pendingEvent, 0, len(batch.Events))
	for _, e := range batch.Events {
		pending = append(pending, pendingEvent{ev: e, involved: involved})
	}
	if r.outbox != nil {
		r.outbox.offer(r.Name(), pending)
		return nil
	}
	for _, e := range pending {
		if err := r.s.postEvent(r.s.ctx, e.kubeEvent()); err != nil {
			return err
		}
		r.forwarded(e)
	}
	return nil
}

// forwarded moves the cursor past an event whose Kubernetes Event exists.
func (r *run) forwarded(p pendingEvent) {
	st := r.Hardware()
	st.EventCursor = p.ev.Cursor
	if p.ev.Power != "" {
		st.PowerState = string(p.ev.Power)
	}
}

// kubeEvent is the pending event's Kubernetes Event. It is made only to be
// written: a fleet's backlog waits in the outbox as the machine events
// themselves, which share their text with the driver's copy.
func (p pendingEvent) kubeEvent() *corev1.Event {
	e := p.ev
	reason, typ := equinixv1.ReasonHardwareEvent, corev1.EventTypeNormal
	if e.Severity == machine.SeverityWarning {
		reason, typ = equinixv1.ReasonHardwareWarning, corev1.EventTypeWarning
	}
	at := metav1.NewTime(e.Time)
	if e.Time.IsZero() {
		at = metav1.NewTime(p.involved.at)
	}
	namespace := p.involved.ref.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   namespace,
			Name:        eventName(p.involved.owner, e.ID),
			Annotations: map[string]string{equinixv1.AnnotationMachineEventID: e.ID},
		},
		InvolvedObject: p.involved.ref,
		Reason:         reason,
		Message:        message(e),
		Type:           typ,
		Source:         corev1.EventSource{Component: eventComponent},
		FirstTimestamp: at,
		LastTimestamp:  at,
		Count:          1,
	}
}

// postEvent writes an Event; one that exists was forwarded before, by a
// run whose cursor was not saved.
func (s *Steps) postEvent(ctx context.Context, ev *corev1.Event) error {
	_, err := s.events.Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	switch {
	case err == nil:
		metrics.EventsForwarded.WithLabelValues(eventNode(ev), ev.Type).Inc()
		return nil
	case apierrors.IsAlreadyExists(err):
		return nil
	default:
		return fmt.Errorf("forwarding event %s about %s: %w", ev.Annotations[equinixv1.AnnotationMachineEventID], ev.InvolvedObject.Name, err)
	}
}

// involvedObjectRef is the Node once it exists, else the target.
func (r *run) involvedObjectRef() corev1.ObjectReference {
	if r.node != nil {
		return corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: r.node.Name, UID: r.node.UID}
	}
	return r.Reference()
}

// eventName is the same for one machine event whoever forwards it.
func eventName(owner, eventID string) string {
	sum := sha256.Sum256([]byte(eventID))
	return owner + ".hw-" + hex.EncodeToString(sum[:8])
}

func message(e machine.Event) string {
	msg := e.Message
	if e.Type != "" {
		msg = e.Type + ": " + msg
	}
	if len(msg) <= maxMessage {
		return msg
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut]
}
