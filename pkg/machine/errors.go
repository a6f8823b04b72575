package machine

import "github.com/harvester/harvester-equinix-addon/pkg/failure"

// Seam names a Machine's errors (failure.Error.Seam). Their classes are the
// chain's view of the provider's answer: NotFound (the machine is gone),
// Unauthorized, Throttled, Busy and Refused (nothing was carried out), and
// Transient and Unknown (for Power, the action may have been carried out).
const Seam = "machine"

// FromSeam is the one place a provider seam's failure becomes the chain's:
// the error of op, whose class says what the seam's means for the chain,
// with the seam's message and wait, wrapping err.
func FromSeam(op string, err error) *failure.Error {
	if err == nil {
		return nil
	}
	return &failure.Error{Seam: Seam, Op: op, Class: chainClass(failure.ClassOf(err)), Message: failure.Message(err),
		RetryAfter: failure.RetryAfter(err), Err: err}
}

// chainClass maps a seam's class onto the chain's.
func chainClass(c failure.Class) failure.Class {
	switch c {
	case failure.NotFound, failure.Throttled, failure.Busy, failure.Transient:
		return c
	case failure.Unauthorized, failure.Forbidden:
		return failure.Unauthorized
	case failure.Unreachable:
		return failure.Transient
	case failure.Invalid, failure.NoCapacity, failure.ProtocolMismatch, failure.TLS, failure.Unsupported, failure.Refused:
		return failure.Refused
	}
	return failure.Unknown
}

// MaybeApplied reports whether a failed Power call may have been carried out
// all the same: its answer was lost or unreadable.
func MaybeApplied(err error) bool {
	switch failure.ClassOf(err) {
	case failure.Unknown, failure.Transient:
		return err != nil
	}
	return false
}
