package bmc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

// Class says what a failure means, so a controller can turn it into a
// condition without reading messages.
type Class string

// Error classes.
const (
	// Unreachable: nothing answered (connection refused, timeout while
	// connecting, DNS failure, UDP silence). Check address and network.
	Unreachable Class = "Unreachable"
	// Unauthorized: the BMC refused the credentials (HTTP 401/403, IPMI
	// RAKP or user-name rejection). Fix the Secret.
	Unauthorized Class = "Unauthorized"
	// ProtocolMismatch: something answered but it does not speak the chosen
	// protocol (not Redfish, not TLS, IPMI port asked for HTTPS...).
	ProtocolMismatch Class = "ProtocolMismatch"
	// TLS: the BMC's certificate is not trusted. Add its CA to the CA bundle
	// or opt in to insecureSkipVerify.
	TLS Class = "TLS"
	// Unsupported: the BMC lacks the operation (no Reset action, no SEL...).
	Unsupported Class = "Unsupported"
	// Transient: the BMC failed mid-call (5xx, timeout after connecting,
	// broken session). Try again later.
	Transient Class = "Transient"
	// Invalid: the request or the endpoint is wrong; Message says what.
	Invalid Class = "Invalid"
)

// Error is every failure a Client or Dial returns. Its text never holds the
// password: Dial and the drivers scrub it before building one.
type Error struct {
	// Op is the Client method, e.g. "Power".
	Op string
	// Endpoint is Endpoint.String(): protocol, user and address.
	Endpoint string
	Class    Class
	// Message says what went wrong in words a user can act on.
	Message string
	// Err is the library's error, kept for errors.Is/As; nil when its text
	// held the password.
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("bmc %s %s: %s: %s", e.Op, e.Endpoint, e.Class, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// ClassOf returns the class of an error from this package, or "" for any
// other error (including nil).
func ClassOf(err error) Class {
	var be *Error
	if errors.As(err, &be) {
		return be.Class
	}
	return ""
}

// newError builds an *Error, scrubbing the password from the message and
// dropping the cause if its text holds the password.
func newError(op string, ep Endpoint, class Class, message string, cause error) *Error {
	if pw := string(ep.Password); pw != "" {
		message = redact.Scrub(message, ep.Password)
		if cause != nil && strings.Contains(cause.Error(), pw) {
			cause = nil
		}
	}
	return &Error{Op: op, Endpoint: ep.String(), Class: class, Message: message, Err: cause}
}

// classifyNet recognises the transport failures both drivers share. ok is
// false when err is none of them. connected says whether the session was
// up: a timeout before that means nobody answers, after it a slow BMC.
func classifyNet(err error, connected bool) (class Class, message string, ok bool) {
	var (
		dnsErr     *net.DNSError
		unknownCA  x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalidErr x509.CertificateInvalidError
		verifyErr  *tls.CertificateVerificationError
		recordErr  tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalidErr), errors.As(err, &verifyErr):
		return TLS, fmt.Sprintf("the BMC's TLS certificate is not trusted (%s); add the CA that signed it to the CA bundle, or set insecureSkipVerify to accept any certificate", rootCause(err)), true
	case errors.As(err, &recordErr):
		return ProtocolMismatch, "the port does not speak TLS (is it a plain HTTP or an IPMI port?)", true
	case errors.As(err, &dnsErr):
		return Unreachable, fmt.Sprintf("cannot resolve host: %s", rootCause(err)), true
	case errors.Is(err, syscall.ECONNREFUSED):
		return Unreachable, "connection refused: nothing listens on that port", true
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return Unreachable, fmt.Sprintf("no route to the BMC: %s", rootCause(err)), true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		if connected {
			return Transient, "the BMC closed the connection mid-call", true
		}
		return Unreachable, "the BMC closed the connection", true
	case isTimeout(err):
		if connected {
			return Transient, "the BMC did not answer in time", true
		}
		return Unreachable, "no answer from the BMC in time", true
	}
	return "", "", false
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// rootCause is the innermost error's text, which is what a user can act on;
// the wrapping layers of the libraries only repeat the call path.
func rootCause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}
