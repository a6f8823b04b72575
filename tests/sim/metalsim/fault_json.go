package metalsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// faultKinds are the kinds a Fault may have.
var faultKinds = []FaultKind{
	FaultRateLimit, FaultServerError, FaultForbidden, FaultLatency, FaultDropConnection,
	FaultProvisionFailure, FaultNoCapacity, FaultSpotReclaim,
}

// faultWire is a Fault on the wire: the same fields in snake_case, with
// durations as Go duration strings ("2s", "150ms").
type faultWire struct {
	Kind        FaultKind `json:"kind"`
	Operations  []string  `json:"operations,omitempty"`
	Actions     []string  `json:"actions,omitempty"`
	Probability float64   `json:"probability,omitempty"`
	Count       int       `json:"count,omitempty"`
	Status      int       `json:"status,omitempty"`
	Body        string    `json:"body,omitempty"`
	ContentType string    `json:"content_type,omitempty"`
	Message     string    `json:"message,omitempty"`
	RetryAfter  string    `json:"retry_after,omitempty"`
	Latency     string    `json:"latency,omitempty"`
	LeadTime    string    `json:"lead_time,omitempty"`
	AfterStore  bool      `json:"after_store,omitempty"`
	Plan        string    `json:"plan,omitempty"`
	Metro       string    `json:"metro,omitempty"`
}

// MarshalJSON writes the fault as the admin API takes it.
func (f Fault) MarshalJSON() ([]byte, error) {
	return json.Marshal(faultWire{
		Kind: f.Kind, Operations: f.Operations, Actions: f.Actions, Probability: f.Probability, Count: f.Count,
		Status: f.Status, Body: f.Body, ContentType: f.ContentType, Message: f.Message,
		RetryAfter: durationText(f.RetryAfter), Latency: durationText(f.Latency), LeadTime: durationText(f.LeadTime),
		AfterStore: f.AfterStore, Plan: f.Plan, Metro: f.Metro,
	})
}

// UnmarshalJSON reads a fault, refusing unknown fields, unknown kinds and
// values that make no sense, so a typo never injects a fault that silently
// never fires.
func (f *Fault) UnmarshalJSON(b []byte) error {
	var w faultWire
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return fmt.Errorf("fault: %w", err)
	}
	if !slices.Contains(faultKinds, w.Kind) {
		return fmt.Errorf("fault: kind %q is not one of %v", w.Kind, faultKinds)
	}
	out := Fault{
		Kind: w.Kind, Operations: w.Operations, Actions: w.Actions, Probability: w.Probability, Count: w.Count,
		Status: w.Status, Body: w.Body, ContentType: w.ContentType, Message: w.Message,
		AfterStore: w.AfterStore, Plan: w.Plan, Metro: w.Metro,
	}
	var err error
	for _, d := range []struct {
		name string
		text string
		dst  *time.Duration
	}{{"retry_after", w.RetryAfter, &out.RetryAfter}, {"latency", w.Latency, &out.Latency}, {"lead_time", w.LeadTime, &out.LeadTime}} {
		if d.text == "" {
			continue
		}
		if *d.dst, err = time.ParseDuration(d.text); err != nil || *d.dst < 0 {
			return fmt.Errorf("fault: %s %q is not a duration like 2s or 150ms", d.name, d.text)
		}
	}
	switch {
	case out.Probability < 0 || out.Probability > 1:
		return fmt.Errorf("fault: probability %v is not between 0 and 1", out.Probability)
	case out.Count < 0:
		return fmt.Errorf("fault: count %d is negative", out.Count)
	case out.Status != 0 && (out.Kind != FaultServerError || out.Status < 500 || out.Status > 599):
		return fmt.Errorf("fault: status %d applies to a server_error fault only and must be a 5xx", out.Status)
	}
	*f = out
	return nil
}

func durationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// FaultState is an injected fault with how often it fired.
type FaultState struct {
	ID    FaultID `json:"id"`
	Fired int     `json:"fired"`
	Fault Fault   `json:"fault"`
}

// Faults lists the injected faults, oldest first.
func (s *Simulator) Faults() []FaultState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]FaultState, 0, len(s.faults))
	for _, e := range s.faults {
		out = append(out, FaultState{ID: e.id, Fired: e.fired, Fault: e.fault})
	}
	return out
}
