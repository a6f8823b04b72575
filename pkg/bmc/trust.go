package bmc

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
)

// Certificate is what a Redfish BMC presented, as the client judged it.
type Certificate struct {
	// SHA256 is the fingerprint of the leaf certificate (its DER), upper
	// case hex in pairs joined by colons: what `openssl x509 -noout
	// -fingerprint -sha256` prints.
	SHA256 string
	// Verified says the certificate chains to the system roots or the CA
	// bundle for the BMC's host name: trusted whatever was pinned.
	Verified bool
}

// CertificateReporter is a Client that reports the certificate its BMC
// presented (Redfish); ok is false before any TLS handshake.
type CertificateReporter interface {
	PeerCertificate() (cert Certificate, ok bool)
}

// CertificateChangedError is the cause of a TLS failure whose certificate
// is neither verified nor one of those pinned: the BMC's certificate
// changed, or something between the addon and the BMC presents its own.
type CertificateChangedError struct {
	// Presented is the fingerprint of the certificate refused.
	Presented string
	// Pinned are the fingerprints trusted.
	Pinned []string
}

func (e *CertificateChangedError) Error() string {
	return fmt.Sprintf("the BMC presented a certificate with SHA-256 fingerprint %s, not the one trusted (%s)", e.Presented, strings.Join(e.Pinned, ", "))
}

// Fingerprint is the SHA-256 fingerprint of a DER certificate, in the
// form Certificate.SHA256 uses.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	out := make([]string, len(sum))
	for i, b := range sum {
		out[i] = strings.ToUpper(hex.EncodeToString([]byte{b}))
	}
	return strings.Join(out, ":")
}

// NormalizeFingerprint brings a SHA-256 fingerprint a person wrote (with or
// without colons, any case) to the form Fingerprint makes; ok is false for
// anything but 32 bytes of hex.
func NormalizeFingerprint(s string) (string, bool) {
	raw := strings.NewReplacer(":", "", " ", "", "-", "").Replace(strings.TrimSpace(s))
	b, err := hex.DecodeString(raw)
	if err != nil || len(b) != sha256.Size {
		return "", false
	}
	out := make([]string, len(b))
	for i, x := range b {
		out[i] = strings.ToUpper(hex.EncodeToString([]byte{x}))
	}
	return strings.Join(out, ":"), true
}

// trust judges the certificates of one client's TLS handshakes. A
// certificate is trusted when it chains to the roots (the system's plus the
// CA bundle) for the host, or is one of those pinned, or, with trust on
// first use and nothing pinned, is the first one this client saw: from
// then on, this client trusts that one only (besides a verified one).
type trust struct {
	ep    Endpoint
	roots *x509.CertPool

	mu   sync.Mutex
	seen *Certificate
	// first is the certificate trusted on first use by this client.
	first string
}

func newTrust(ep Endpoint, roots *x509.CertPool) *trust {
	return &trust{ep: ep, roots: roots}
}

// peer is the certificate of the last handshake.
func (t *trust) peer() (Certificate, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen == nil {
		return Certificate{}, false
	}
	return *t.seen, true
}

// verify is the handshake's check (tls.Config.VerifyConnection).
func (t *trust) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the BMC presented no certificate")
	}
	leaf := cs.PeerCertificates[0]
	cert := Certificate{SHA256: Fingerprint(leaf.Raw)}
	opts := x509.VerifyOptions{Roots: t.roots, Intermediates: x509.NewCertPool()}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if ip := net.ParseIP(t.ep.Host); ip == nil {
		opts.DNSName = t.ep.Host
	}
	_, verr := leaf.Verify(opts)
	if verr == nil && net.ParseIP(t.ep.Host) != nil {
		// Verify checks a name only; an address must be among the IP SANs.
		verr = leaf.VerifyHostname(t.ep.Host)
	}
	cert.Verified = verr == nil
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.ep.InsecureSkipVerify, cert.Verified:
	case slices.Contains(t.ep.PinnedCertificates, cert.SHA256), t.first == cert.SHA256:
	case len(t.ep.PinnedCertificates) > 0:
		return &CertificateChangedError{Presented: cert.SHA256, Pinned: t.ep.PinnedCertificates}
	case t.ep.TrustOnFirstUse && len(t.ep.CABundle) == 0 && t.first == "":
		t.first = cert.SHA256
	case t.first != "":
		return &CertificateChangedError{Presented: cert.SHA256, Pinned: []string{t.first}}
	default:
		return verr
	}
	t.seen = &cert
	return nil
}

// tlsConfig is the TLS configuration of a Redfish client. The standard
// verification is off only because verify does it, and more: it also
// trusts the certificates pinned, and the first one on first use.
func (t *trust) tlsConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true, VerifyConnection: t.verify} //nolint:gosec // verify checks every handshake
}
