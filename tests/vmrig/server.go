package vmrig

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Request is one HTTP request the guest made.
type Request struct {
	At     time.Time
	Method string
	Path   string
	// RawQuery is the query as the guest sent it: iPXE leaves ${uuid} and
	// ${mac:hexhyp} as they are and escapes ":" as %3A.
	RawQuery string
	Query    url.Values
	// Status and Bytes are the answer's.
	Status    int
	Bytes     int64
	UserAgent string
}

// URL is the path and query as requested.
func (r Request) URL() string {
	if r.RawQuery == "" {
		return r.Path
	}
	return r.Path + "?" + r.RawQuery
}

// recorder serves the guest: the test's handler, with every request
// recorded once answered.
type recorder struct {
	handler http.Handler
	srv     *http.Server
	port    int

	mu   sync.Mutex
	reqs []Request
}

func startRecorder(h http.Handler) (*recorder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the guest: %w", err)
	}
	r := &recorder{handler: h, port: ln.Addr().(*net.TCPAddr).Port}
	// No idle timeout: the guest's connections share one forwarded
	// stream, which must stay open while the VM runs.
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.note(Request{At: time.Now(), Path: "(server failed: " + err.Error() + ")"})
		}
	}()
	return r, nil
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	cw := &countingWriter{ResponseWriter: w, status: http.StatusOK}
	r.handler.ServeHTTP(cw, req)
	r.note(Request{At: time.Now(), Method: req.Method, Path: req.URL.Path, RawQuery: req.URL.RawQuery, Query: req.URL.Query(),
		Status: cw.status, Bytes: cw.bytes, UserAgent: req.UserAgent()})
}

func (r *recorder) note(req Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
}

func (r *recorder) requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.reqs...)
}

func (r *recorder) close() { _ = r.srv.Close() }

type countingWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
}

func (w *countingWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(b []byte) (int, error) {
	w.wrote = true
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}
