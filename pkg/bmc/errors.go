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

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

// Seam names the BMC clients' errors (failure.Error.Seam), whose Endpoint
// is Endpoint.String(): protocol, user and address. Their classes:
// Unreachable (nothing answered: check address and network), Unauthorized
// (HTTP 401/403, IPMI RAKP or user-name rejection: fix the Secret),
// ProtocolMismatch (something answered, not in the chosen protocol), TLS
// (the certificate is not trusted: add its CA or opt in to
// insecureSkipVerify), Unsupported (the BMC lacks the operation),
// Transient (a failure mid-call: try again later) and Invalid (the request
// or the endpoint is wrong). An error's text never holds the password:
// Dial and the drivers scrub it before building one.
const Seam = "bmc"

// newError builds an error of this seam, scrubbing the password from the
// message and dropping the cause if its text holds the password.
func newError(op string, ep Endpoint, class failure.Class, message string, cause error) *failure.Error {
	if pw := string(ep.Password); pw != "" {
		message = redact.Scrub(message, ep.Password)
		if cause != nil && strings.Contains(cause.Error(), pw) {
			cause = nil
		}
	}
	return &failure.Error{Seam: Seam, Op: op, Endpoint: ep.String(), Class: class, Message: message, Err: cause}
}

// classifyNet recognises the transport failures both drivers share. ok is
// false when err is none of them. connected says whether the session was
// up: a timeout before that means nobody answers, after it a slow BMC.
func classifyNet(err error, connected bool) (class failure.Class, message string, ok bool) {
	var (
		dnsErr     *net.DNSError
		unknownCA  x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalidErr x509.CertificateInvalidError
		verifyErr  *tls.CertificateVerificationError
		recordErr  tls.RecordHeaderError
	)
	var changed *CertificateChangedError
	switch {
	case errors.As(err, &changed):
		return failure.TLS, changed.Error() + ": the BMC's certificate changed, or something between the addon and the BMC " +
			"presents its own; nothing was sent to it", true
	case errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalidErr), errors.As(err, &verifyErr):
		return failure.TLS, fmt.Sprintf("the BMC's TLS certificate is not trusted (%s); add the CA that signed it to the CA bundle, or set insecureSkipVerify to accept any certificate", rootCause(err)), true
	case errors.As(err, &recordErr):
		return failure.ProtocolMismatch, "the port does not speak TLS (is it a plain HTTP or an IPMI port?)", true
	case errors.As(err, &dnsErr):
		return failure.Unreachable, fmt.Sprintf("cannot resolve host: %s", rootCause(err)), true
	case errors.Is(err, syscall.ECONNREFUSED):
		return failure.Unreachable, "connection refused: nothing listens on that port", true
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return failure.Unreachable, fmt.Sprintf("no route to the BMC: %s", rootCause(err)), true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		if connected {
			return failure.Transient, "the BMC closed the connection mid-call", true
		}
		return failure.Unreachable, "the BMC closed the connection", true
	case isTimeout(err) && isDial(err):
		// No connection could be made, even on a session opened before:
		// the BMC is gone, not slow.
		return failure.Unreachable, "no answer from the BMC in time", true
	case isTimeout(err):
		if connected {
			return failure.Transient, "the BMC did not answer in time", true
		}
		return failure.Unreachable, "no answer from the BMC in time", true
	}
	return "", "", false
}

// isDial says whether err is a failure to connect.
func isDial(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
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
