// Package failure is the one scheme by which the seams (pkg/metal,
// pkg/bmc, pkg/machine) say what a failed call means: a Class, chosen by
// the seam from what it knows (a status code, a protocol's answer), and an
// Error carrying it with a message safe to show to people. Callers act on
// the class, never on a message.
package failure

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Class says what a failed call means for its caller.
type Class string

// Classes every seam may use.
const (
	// Unknown is an answer nothing else fits (an unexpected status, an
	// answer that could not be read); the call may have been acted on.
	// It is the class of an error no seam classified.
	Unknown Class = "Unknown"
	// NotFound: the object addressed is gone.
	NotFound Class = "NotFound"
	// Unauthorized: the credentials were refused or are wrong. Fix them;
	// never take it for the object being gone.
	Unauthorized Class = "Unauthorized"
	// Throttled: a refusal for sending too much; RetryAfter says how long
	// to wait. Nothing was carried out.
	Throttled Class = "Throttled"
	// Transient: a transport failure, a timeout or a server error: try
	// again later. A context that ended is Transient.
	Transient Class = "Transient"
	// Busy: a refusal because of the object's state right now (it is
	// provisioning, or already changing power). Try again later.
	Busy Class = "Busy"
	// Invalid: the request, or the settings it was built from, must be
	// fixed; the message says what.
	Invalid Class = "Invalid"
)

// Classes only one seam has, where its callers need the difference.
const (
	// Forbidden (metal): a 403, which the API also answers for a device
	// that failed or was deleted, and in bursts under rate limiting:
	// confirm with a tag list before treating a device as gone.
	Forbidden Class = "Forbidden"
	// NoCapacity (metal): no hardware for the plan in the metro (or on the
	// reservation): retry much later or elsewhere.
	NoCapacity Class = "NoCapacity"
	// Unreachable (bmc): nothing answered (connection refused, timeout
	// while connecting, DNS failure, UDP silence).
	Unreachable Class = "Unreachable"
	// ProtocolMismatch (bmc): something answered, but not in the chosen
	// protocol.
	ProtocolMismatch Class = "ProtocolMismatch"
	// TLS (bmc): the BMC's certificate is not trusted.
	TLS Class = "TLS"
	// Unsupported (bmc): the BMC lacks the operation (no Reset action, no
	// event log).
	Unsupported Class = "Unsupported"
	// Refused (machine): a refusal that waiting alone will not change. For
	// a power action, nothing was carried out.
	Refused Class = "Refused"
)

// Error is every failure a seam returns.
type Error struct {
	// Seam is the package that classified it ("metal", "bmc", "machine"),
	// the first word of its text.
	Seam string
	// Op is the seam's operation, e.g. "GetDevice" or "Power".
	Op string
	// Endpoint names what was called when the seam alone does not (a
	// BMC's protocol, user and address); never a credential.
	Endpoint string
	// StatusCode is the HTTP status, or 0 when there was none.
	StatusCode int
	Class      Class
	// Message says what went wrong in words a person can act on; it never
	// holds a credential.
	Message string
	// RetryAfter is how long the other side asked to wait, when it said.
	RetryAfter time.Duration
	// Err is the underlying error, for errors.Is and errors.As; a seam
	// drops it when its text held a credential.
	Err error
}

// Error reads "<seam> <op> [<endpoint>]: [<status>] <class>[: <message>]
// [(retry after <wait>)]".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Seam)
	b.WriteByte(' ')
	b.WriteString(e.Op)
	if e.Endpoint != "" {
		b.WriteByte(' ')
		b.WriteString(e.Endpoint)
	}
	b.WriteString(": ")
	if e.StatusCode != 0 {
		b.WriteString(strconv.Itoa(e.StatusCode))
		b.WriteByte(' ')
	}
	b.WriteString(string(e.Class))
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter.Round(time.Second))
	}
	return b.String()
}

// Unwrap gives access to the underlying error, so that
// errors.Is(err, context.DeadlineExceeded) works.
func (e *Error) Unwrap() error { return e.Err }

// ClassOf returns the class of err: that of the outermost *Error in its
// chain; Transient for a context that ended; Unknown for any other error,
// and for nil.
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Transient
	}
	return Unknown
}

// From returns the *Error of seam in err's chain, or nil.
func From(err error, seam string) *Error {
	for err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return nil
		}
		if e.Seam == seam {
			return e
		}
		err = e.Err
	}
	return nil
}

// RetryAfter is how long err asks to wait, or zero.
func RetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

// SlowDown says how long to wait before asking again when err is a refusal
// that only time cures: Throttled waits what it asked, or fallback when it
// asked nothing; Busy waits fallback. Any other class answers false.
func SlowDown(err error, fallback time.Duration) (time.Duration, bool) {
	switch ClassOf(err) {
	case Throttled:
		if wait := RetryAfter(err); wait > 0 {
			return wait, true
		}
		return fallback, true
	case Busy:
		return fallback, true
	}
	return 0, false
}

// Message is err's message for people: the outermost *Error's own, else
// err's text.
func Message(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Message != "" {
		return e.Message
	}
	return err.Error()
}
