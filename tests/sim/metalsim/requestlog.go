package metalsim

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Request is one entry of the request log. It never holds the token or
// the request body.
type Request struct {
	// Time is the simulator clock's time when the request arrived.
	Time      time.Time
	Method    string
	Path      string
	Query     string
	Operation string
	// Status is the answered status code, 0 for a dropped connection.
	Status int
	// Fault is the kind of the injected fault that hit the request, if any.
	Fault   FaultKind
	Dropped bool
}

// Requests returns a copy of the request log, oldest first.
func (s *Simulator) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// RequestsFor returns the logged requests of one operation, oldest first.
func (s *Simulator) RequestsFor(op string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.requests {
		if r.Operation == op {
			out = append(out, r)
		}
	}
	return out
}

// ResetRequests empties the request log.
func (s *Simulator) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

func (s *Simulator) logRequest(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
}

// nominalRateLimit is the X-RateLimit-Limit of injected 429s when no
// RateLimit is configured.
const nominalRateLimit = 1000

// rateLimiter is a fixed-window request counter per token on the
// simulator's clock.
type rateLimiter struct {
	mu      sync.Mutex
	limit   int
	window  time.Duration
	windows map[string]*rateWindow
}

type rateWindow struct {
	start time.Time
	count int
}

// take counts one request of token and returns the X-RateLimit-* headers
// and whether the request is over the limit.
func (r *rateLimiter) take(token string, now time.Time) (http.Header, bool) {
	if r.limit <= 0 {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.windows[token]
	if w == nil || !now.Before(w.start.Add(r.window)) {
		w = &rateWindow{start: now}
		r.windows[token] = w
	}
	w.count++
	remaining := max(r.limit-w.count, 0)
	h := http.Header{}
	h.Set("X-RateLimit-Limit", strconv.Itoa(r.limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(w.start.Add(r.window).Unix(), 10))
	if w.count > r.limit {
		retry := w.start.Add(r.window).Sub(now)
		h.Set("Retry-After", strconv.Itoa(max(int(retry.Seconds()+0.999), 1)))
		return h, true
	}
	return h, false
}
