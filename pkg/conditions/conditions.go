// Package conditions keeps metav1.Condition lists the way Kubernetes API
// conventions ask: observedGeneration on every condition, lastTransitionTime
// moved only when the status flips, and a non-empty CamelCase reason.
package conditions

import (
	"errors"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Set records a condition and reports whether anything a reader would notice
// (status, reason or message) changed, so callers emit an Event only then.
func Set(conds *[]metav1.Condition, generation int64, condType string, status metav1.ConditionStatus, reason, message string) bool {
	if reason == "" {
		reason = string(status)
	}
	old := meta.FindStatusCondition(*conds, condType)
	changed := old == nil || old.Status != status || old.Reason != reason || old.Message != message
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: message, ObservedGeneration: generation,
	})
	return changed
}

// Store records whole conditions, such as ones derived from the others, and
// reports whether any changed.
func Store(conds *[]metav1.Condition, generation int64, cs ...metav1.Condition) bool {
	changed := false
	for _, c := range cs {
		changed = Set(conds, generation, c.Type, c.Status, c.Reason, c.Message) || changed
	}
	return changed
}

// True sets a True condition.
func True(conds *[]metav1.Condition, generation int64, condType, reason, message string) bool {
	return Set(conds, generation, condType, metav1.ConditionTrue, reason, message)
}

// False sets a False condition.
func False(conds *[]metav1.Condition, generation int64, condType, reason, message string) bool {
	return Set(conds, generation, condType, metav1.ConditionFalse, reason, message)
}

// Unknown sets an Unknown condition.
func Unknown(conds *[]metav1.Condition, generation int64, condType, reason, message string) bool {
	return Set(conds, generation, condType, metav1.ConditionUnknown, reason, message)
}

// IsTrue reports whether the condition is present and True.
func IsTrue(conds []metav1.Condition, condType string) bool {
	return meta.IsStatusConditionTrue(conds, condType)
}

// IsFalse reports whether the condition is present and False.
func IsFalse(conds []metav1.Condition, condType string) bool {
	return meta.IsStatusConditionFalse(conds, condType)
}

// Get returns the condition, or nil.
func Get(conds []metav1.Condition, condType string) *metav1.Condition {
	return meta.FindStatusCondition(conds, condType)
}

// Remove drops a condition; it reports whether one was there.
func Remove(conds *[]metav1.Condition, condType string) bool {
	return meta.RemoveStatusCondition(conds, condType)
}

// Error is a problem a person has to fix, carrying the condition reason that
// names it; its message says what is missing and how to provide it.
type Error struct {
	Reason  string
	Message string
}

func (e *Error) Error() string { return e.Message }

// AsError returns the *Error in err's chain, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
