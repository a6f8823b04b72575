package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
)

// readiness is set once the process can do its job: either its caches are synced
// as leader, or it is a healthy standby waiting for the lease.
type readiness struct{ ready atomic.Bool }

func newMux(r *readiness) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !r.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	return mux
}

// serve runs srv until ctx ends, then shuts it down gracefully.
func serve(ctx context.Context, srv *http.Server) error {
	errCh := make(chan error, 1)
	go func() { errCh <- srv.ListenAndServe() }()
	select {
	case err := <-errCh:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-errCh; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// startPprof serves the profiler on loopback only: it exposes memory contents
// and must never be reachable from the pod network.
func startPprof(ctx context.Context) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Addr: "127.0.0.1:6060", Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := serve(ctx, srv); err != nil {
			logrus.Warnf("pprof server: %v", err)
		}
	}()
}
