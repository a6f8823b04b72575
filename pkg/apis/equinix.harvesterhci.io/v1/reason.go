package v1

import (
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
)

// Reason is a condition's or an Event's reason, as declared in reasons.go:
// its name (the value the API carries), whether it needs a person's
// attention (a Warning Event), and whether a False condition with it holds
// its object until a person acts (Stalled). A stalling reason is a warning.
type Reason struct {
	Name    string
	Warning bool
	Stalls  bool
}

// reasons are the declared reasons by name.
var reasons = map[string]Reason{}

// camelCase is how every reason is spelled.
var camelCase = regexp.MustCompile(`^[A-Z][A-Za-z]+$`)

// declare adds r to the vocabulary and returns its name. A reason spelled
// otherwise, or declared twice, stops the program as it starts: the
// vocabulary is one of a kind.
func declare(r Reason) string {
	if !camelCase.MatchString(r.Name) {
		panic(fmt.Sprintf("reason %q is not CamelCase", r.Name))
	}
	if _, dup := reasons[r.Name]; dup {
		panic(fmt.Sprintf("reason %q is declared twice", r.Name))
	}
	reasons[r.Name] = r
	return r.Name
}

// normal declares a reason of progress: a Normal Event.
func normal(name string) string { return declare(Reason{Name: name}) }

// warning declares a reason that needs a person's attention: something to
// fix, or something the addon did on its own that a person should know
// about.
func warning(name string) string { return declare(Reason{Name: name, Warning: true}) }

// stalling declares a warning that, on a False condition, holds its object
// until a person acts.
func stalling(name string) string { return declare(Reason{Name: name, Warning: true, Stalls: true}) }

// ReasonOf is the declared reason of that name; ok is false for a name
// that is not one of the addon's reasons.
func ReasonOf(name string) (r Reason, ok bool) {
	r, ok = reasons[name]
	return r, ok
}

// Stalls reports whether a condition with this reason, when False, holds its
// object until a person acts.
func Stalls(reason string) bool { return reasons[reason].Stalls }

// EventType is the type of the Event a reason is recorded with: Warning for
// the reasons that need a person, Normal for progress.
func EventType(reason string) string {
	if IsWarning(reason) {
		return corev1.EventTypeWarning
	}
	return corev1.EventTypeNormal
}

// IsWarning reports whether a reason needs a person's attention.
func IsWarning(reason string) bool { return reasons[reason].Warning }
