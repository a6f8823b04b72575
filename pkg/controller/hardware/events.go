package hardware

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	hw "github.com/harvester/harvester-equinix-addon/pkg/hardware"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// Events of cluster-scoped objects live in "default", as the recorder puts
// them; the source is the addon's, as for its other Events.
const (
	eventNamespace = metav1.NamespaceDefault
	eventComponent = "harvester-equinix-addon"
	// maxMessage bounds an Event's message (the API keeps at most 1 KiB).
	maxMessage = 1024
)

// forwardEvents turns the machine's new events into Kubernetes Events on
// the Node (on the target while there is none) and moves the cursor past
// each one handed on. Each Event's name is derived from the machine
// event's ID, so an event handed on before a crash that kept the cursor
// from being saved is found to exist rather than sent twice.
func (r *run) forwardEvents() error {
	st := r.t.hardware()
	batch, err := r.machine.Events(r.h.ctx, st.EventCursor)
	if err != nil {
		return fmt.Errorf("reading the machine's events: %w", err)
	}
	if batch.RecheckAfter > 0 {
		r.Requeue(batch.RecheckAfter)
	}
	for _, e := range batch.Events {
		if err := r.forward(e); err != nil {
			return err
		}
		st = r.t.hardware()
		st.EventCursor = e.Cursor
		if e.Power != "" {
			st.PowerState = string(e.Power)
		}
	}
	return nil
}

func (r *run) forward(e hw.Event) error {
	ref := r.eventSubject()
	reason, typ := v1.ReasonHardwareEvent, corev1.EventTypeNormal
	if e.Severity == hw.SeverityWarning {
		reason, typ = v1.ReasonHardwareWarning, corev1.EventTypeWarning
	}
	at := metav1.NewTime(e.Time)
	if e.Time.IsZero() {
		at = metav1.NewTime(r.now)
	}
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   eventNamespace,
			Name:        eventName(r.t.name(), e.ID),
			Annotations: map[string]string{v1.AnnotationMachineEventID: e.ID},
		},
		InvolvedObject: ref,
		Reason:         reason,
		Message:        message(e),
		Type:           typ,
		Source:         corev1.EventSource{Component: eventComponent},
		FirstTimestamp: at,
		LastTimestamp:  at,
		Count:          1,
	}
	_, err := r.h.events.Events(eventNamespace).Create(r.h.ctx, ev, metav1.CreateOptions{})
	switch {
	case err == nil:
		metrics.EventsForwarded.WithLabelValues(typ).Inc()
		return nil
	case apierrors.IsAlreadyExists(err):
		// Handed on before: the cursor that says so was not saved.
		return nil
	default:
		return fmt.Errorf("forwarding event %s of %s: %w", e.ID, r.t.name(), err)
	}
}

// eventSubject is the Node once it exists, else the target.
func (r *run) eventSubject() corev1.ObjectReference {
	if r.node != nil {
		return corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: r.node.Name, UID: r.node.UID}
	}
	return r.t.reference()
}

// eventName is the same for one machine event whoever forwards it.
func eventName(subject, eventID string) string {
	sum := sha256.Sum256([]byte(eventID))
	return subject + ".hw-" + hex.EncodeToString(sum[:8])
}

func message(e hw.Event) string {
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
