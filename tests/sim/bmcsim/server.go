package bmcsim

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Server serves a BMC over HTTPS with a certificate from its own CA.
type Server struct {
	// URL is https://host:port, the Redfish endpoint without a path.
	URL  string
	Host string
	Port int
	// CACertPEM is the CA that signed the server certificate: put it in a
	// client's CA bundle to trust the server.
	CACertPEM []byte
	// CertPEM is the server certificate itself.
	CertPEM []byte

	addr  string
	hosts []string
	srv   *http.Server

	mu sync.Mutex
	// pair is the certificate served (SelfSigned replaces it).
	pair tls.Certificate
	ln   net.Listener
	// conns are the open client connections, closed by GoAway: a
	// rebooting BMC keeps no connection alive.
	conns map[net.Conn]bool
}

// NewServer listens on addr (127.0.0.1:0 when empty) and serves b over
// TLS. The certificate names 127.0.0.1, ::1 and localhost.
func NewServer(b *BMC, addr string) (*Server, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	host, portStr, _ := net.SplitHostPort(ln.Addr().String())
	port, _ := strconv.Atoi(portStr)
	hosts := []string{"127.0.0.1", "::1", "localhost"}
	c, err := newCerts(hosts)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	s := &Server{
		URL: "https://" + ln.Addr().String(), Host: host, Port: port,
		CACertPEM: c.caPEM, CertPEM: c.certPEM,
		addr: ln.Addr().String(), hosts: hosts, pair: c.pair,
		srv: &http.Server{
			Handler:           b.Handler(),
			ReadHeaderTimeout: 10 * time.Second,
			// Handshake failures of tests that distrust the certificate are
			// expected; keep them out of the test output.
			ErrorLog: log.New(io.Discard, "", 0),
		},
		conns: map[net.Conn]bool{},
	}
	s.srv.TLSConfig = &tls.Config{GetCertificate: s.certificate, MinVersion: tls.VersionTLS12}
	s.srv.ConnState = s.track
	s.serve(ln)
	return s, nil
}

func (s *Server) certificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &s.pair, nil
}

// SelfSigned serves a new self-signed certificate from now on, as most
// BMCs ship one (and make a new one when reset, or when a person asks):
// no CA signed it, so CACertPEM is the certificate itself. Connections
// made before keep the one they saw.
func (s *Server) SelfSigned() error {
	c, err := newSelfSigned(s.hosts)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pair, s.CertPEM, s.CACertPEM = c.pair, c.certPEM, c.certPEM
	return nil
}

// Certificate is the certificate served now, PEM.
func (s *Server) Certificate() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.CertPEM
}

func (s *Server) serve(ln net.Listener) {
	s.ln = ln
	// Serve returns when GoAway or Close shuts the listener; both are
	// expected, so its error carries nothing to report.
	go func() { _ = s.srv.Serve(tls.NewListener(ln, s.srv.TLSConfig)) }()
}

// GoAway closes the listening socket, so new connections are refused as by
// a BMC that is rebooting, until ComeBack.
func (s *Server) GoAway() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	err := s.ln.Close()
	s.ln = nil
	s.srv.SetKeepAlivesEnabled(false)
	for c := range s.conns {
		_ = c.Close()
	}
	if err != nil {
		return fmt.Errorf("close listener: %w", err)
	}
	return nil
}

// ComeBack listens again on the same address.
func (s *Server) ComeBack() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("listen again on %s: %w", s.addr, err)
	}
	s.srv.SetKeepAlivesEnabled(true)
	// A closed http.Server refuses to Serve again, so GoAway only closed
	// the listener and the same server keeps running on the new one.
	s.serve(ln)
	return nil
}

// Close stops the server, waiting up to five seconds for requests in flight.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("shut down BMC simulator: %w", err)
	}
	return nil
}

// track keeps the set of open connections.
func (s *Server) track(c net.Conn, state http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch state {
	case http.StateNew:
		s.conns[c] = true
	case http.StateClosed, http.StateHijacked:
		delete(s.conns, c)
	}
}
