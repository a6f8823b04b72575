package metalsim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Server serves a Simulator on a real listener, for the standalone command
// and for tests that want a port rather than httptest.
type Server struct {
	// URL is the API base URL ending in /metal/v1, ready for
	// metalv1.ServerConfigurations.
	URL string
	// RootURL serves the metadata service (RootURL + "/metadata").
	RootURL string

	srv  *http.Server
	done chan error
}

// NewServer listens on addr (127.0.0.1:0 when empty) and serves sim.
func NewServer(sim *Simulator, addr string) (*Server, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	root := "http://" + ln.Addr().String()
	s := &Server{
		URL:     root + apiPrefix,
		RootURL: root,
		srv:     &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 10 * time.Second},
		done:    make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server, waiting up to five seconds for requests in flight.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("shut down simulator server: %w", err)
	}
	if err := <-s.done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("simulator server: %w", err)
	}
	return nil
}
