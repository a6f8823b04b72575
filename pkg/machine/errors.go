package machine

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Class says what a failed call means for the chain.
type Class int

// Error classes.
const (
	// ClassUnknown is an answer nothing else fits. For Power, the action
	// may have been carried out.
	ClassUnknown Class = iota
	// ClassUnavailable is a transport failure, a timeout or a server error:
	// try again later. For Power, the action may have been carried out.
	ClassUnavailable
	// ClassThrottled is a refusal for sending too much; RetryAfter says how
	// long to wait. Nothing was carried out.
	ClassThrottled
	// ClassBusy is a refusal because of the machine's state right now (it
	// is provisioning, or already changing power). Nothing was carried out.
	ClassBusy
	// ClassRefused is a refusal that waiting alone will not change (an
	// action the machine does not offer). Nothing was carried out.
	ClassRefused
	// ClassUnauthorized is a credentials problem. Nothing was carried out.
	ClassUnauthorized
	// ClassNotFound means the machine is gone.
	ClassNotFound
)

var classNames = [...]string{
	ClassUnknown:      "Unknown",
	ClassUnavailable:  "Unavailable",
	ClassThrottled:    "Throttled",
	ClassBusy:         "Busy",
	ClassRefused:      "Refused",
	ClassUnauthorized: "Unauthorized",
	ClassNotFound:     "NotFound",
}

func (c Class) String() string {
	if c < 0 || int(c) >= len(classNames) {
		return "Class(" + strconv.Itoa(int(c)) + ")"
	}
	return classNames[c]
}

// Error is every failure a Machine returns.
type Error struct {
	// Op is the Machine method: Facts, Events, PowerState or Power.
	Op    string
	Class Class
	// Message is safe to show to people: it never holds a credential.
	Message string
	// RetryAfter is how long the management controller asked to wait.
	RetryAfter time.Duration
	// Err is the driver's own error, for errors.Is and errors.As.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("hardware ")
	b.WriteString(e.Op)
	b.WriteString(": ")
	b.WriteString(e.Class.String())
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap gives access to the driver's error.
func (e *Error) Unwrap() error { return e.Err }

// ClassOf returns the class of err. A context that ended is Unavailable;
// any other error that is not an *Error is Unknown.
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return ClassUnavailable
	}
	return ClassUnknown
}

// MaybeApplied reports whether a failed Power call may have been carried out
// all the same: its answer was lost or unreadable.
func MaybeApplied(err error) bool {
	switch ClassOf(err) {
	case ClassUnknown, ClassUnavailable:
		return err != nil
	}
	return false
}

// RetryAfter is how long err asks to wait, or zero.
func RetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

// Message is err's message for people: an *Error's own, else err's text.
func Message(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Message != "" {
		return e.Message
	}
	return err.Error()
}
