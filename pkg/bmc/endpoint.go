package bmc

import (
	"crypto/x509"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

// Protocol names how a BMC is reached.
type Protocol string

// Protocols.
const (
	// ProtocolRedfish is DMTF Redfish over HTTPS (default port 443).
	ProtocolRedfish Protocol = "redfish"
	// ProtocolIPMI is IPMI 2.0 (RMCP+) over UDP (default port 623).
	ProtocolIPMI Protocol = "ipmi"
)

// Default ports and timeout.
const (
	DefaultRedfishPort = 443
	DefaultIPMIPort    = 623
	// DefaultTimeout bounds one BMC request. BMCs are slow embedded
	// computers; ten seconds covers a loaded one without hiding a dead one.
	DefaultTimeout = 10 * time.Second
)

// Endpoint says where a BMC is and how to log in. Printing it with any fmt
// verb never shows the password.
type Endpoint struct {
	Protocol Protocol
	// Host is a name or an IP address, without scheme or port.
	Host string
	// Port is 0 for the protocol's default.
	Port int
	// InsecureSkipVerify turns TLS verification off (Redfish only). It is
	// never implied: without it, the certificate must chain to the system
	// roots or to CABundle.
	InsecureSkipVerify bool
	// CABundle holds PEM certificates trusted in addition to the system
	// roots (Redfish only): BMCs mostly ship self-signed certificates.
	// With one, only a certificate that chains to it (or the system roots)
	// is trusted: no pin, no trust on first use.
	CABundle []byte
	// PinnedCertificates are SHA-256 fingerprints (see Fingerprint) of
	// certificates trusted besides those that verify (Redfish only): the
	// one trusted on first use before, or one a person accepted.
	PinnedCertificates []string
	// TrustOnFirstUse, without a CA bundle and with nothing pinned, trusts
	// the first certificate the client sees, and from then on that one
	// only (besides one that verifies): CertificateReporter tells which,
	// for the caller to pin.
	TrustOnFirstUse bool
	// Memo is what an earlier connection learnt of this BMC (see Memo).
	Memo     Memo
	Username string
	Password redact.Sensitive
	// Timeout bounds one request to the BMC; 0 means DefaultTimeout.
	Timeout time.Duration
	// SystemID is the Id of the server's computer system (Redfish only),
	// for a BMC that lists several, as the BMC of a multi-node chassis
	// does. Empty: the BMC must list exactly one.
	SystemID string
}

// String names the endpoint for messages: protocol, user and address, never
// the password or the CA bundle.
func (e Endpoint) String() string {
	return fmt.Sprintf("%s://%s@%s", e.Protocol, e.Username, e.Address())
}

// GoString keeps %#v as safe as %v.
func (e Endpoint) GoString() string { return "bmc.Endpoint{" + e.String() + "}" }

// Address is host:port with the protocol's default port filled in.
func (e Endpoint) Address() string {
	return net.JoinHostPort(e.Host, strconv.Itoa(e.port()))
}

func (e Endpoint) port() int {
	if e.Port != 0 {
		return e.Port
	}
	if e.Protocol == ProtocolIPMI {
		return DefaultIPMIPort
	}
	return DefaultRedfishPort
}

func (e Endpoint) timeout() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return DefaultTimeout
}

// Validate checks the endpoint without touching the network. Every problem
// is an *Error of class Invalid naming the field.
func (e Endpoint) Validate() error {
	invalid := func(format string, args ...any) error {
		return &failure.Error{Seam: Seam, Op: "Dial", Endpoint: e.String(), Class: failure.Invalid, Message: fmt.Sprintf(format, args...)}
	}
	switch e.Protocol {
	case ProtocolRedfish, ProtocolIPMI:
	case "":
		return invalid("protocol is empty; use %q or %q", ProtocolRedfish, ProtocolIPMI)
	default:
		return invalid("unknown protocol %q; use %q or %q", string(e.Protocol), ProtocolRedfish, ProtocolIPMI)
	}
	if e.Host == "" {
		return invalid("host is empty")
	}
	if strings.ContainsAny(e.Host, "/@? ") || strings.Contains(e.Host, "://") {
		return invalid("host %q must be a name or an IP address, without scheme, user, port or path", e.Host)
	}
	if _, _, err := net.SplitHostPort(e.Host); err == nil {
		return invalid("host %q carries a port; put it in the port field", e.Host)
	}
	if e.Port < 0 || e.Port > 65535 {
		return invalid("port %d is out of range", e.Port)
	}
	if e.Username == "" {
		return invalid("username is empty")
	}
	// IPMI 2.0 carries at most 16 bytes of user name and 20 of password; a
	// longer one could never log in, whatever the BMC holds.
	if e.Protocol == ProtocolIPMI && len(e.Username) > 16 {
		return invalid("IPMI user names are at most 16 bytes, this one has %d", len(e.Username))
	}
	if e.Protocol == ProtocolIPMI && len(e.Password) > 20 {
		return invalid("IPMI passwords are at most 20 bytes, this one has %d", len(e.Password))
	}
	if e.SystemID != "" && e.Protocol == ProtocolIPMI {
		return invalid("systemID %q is for Redfish: an IPMI BMC controls one system", e.SystemID)
	}
	if strings.ContainsAny(e.SystemID, "/?#") {
		return invalid("systemID %q must be a computer system's Id, not a path", e.SystemID)
	}
	if e.Timeout < 0 {
		return invalid("timeout %s is negative", e.Timeout)
	}
	if e.InsecureSkipVerify && len(e.CABundle) > 0 {
		return invalid("both a CA bundle and insecureSkipVerify are set; choose one")
	}
	if len(e.CABundle) > 0 && !x509.NewCertPool().AppendCertsFromPEM(e.CABundle) {
		return invalid("the CA bundle holds no PEM certificate")
	}
	for _, fp := range e.PinnedCertificates {
		if n, ok := NormalizeFingerprint(fp); !ok || n != fp {
			return invalid("pinned certificate %q is not a SHA-256 fingerprint in the form AB:CD:...", fp)
		}
	}
	return nil
}
