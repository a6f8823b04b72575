package metal

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

const (
	// defaultThrottle is how long calls are refused after a 429 that named no
	// wait. The API publishes no limits; terraform's retry backoff started at
	// 1 s and grew to 30 s.
	defaultThrottle = 10 * time.Second
	// maxThrottle bounds a Retry-After, so a bogus header cannot stop every
	// reconcile for hours.
	maxThrottle = 10 * time.Minute
)

// limiter paces the calls made with one API token: a token bucket spreads a
// large pool's reconciles out, and after the API answered 429 (or announced
// that no requests remain) no call reaches the network until the named time.
// A call made meanwhile waits when the rest of the wait is short (at most
// maxWait) and fails fast otherwise, so the workqueue comes back later.
type limiter struct {
	bucket  *rate.Limiter
	maxWait time.Duration
	now     func() time.Time

	mu             sync.Mutex
	throttledUntil time.Time
}

func newLimiter(rps rate.Limit, burst int, maxWait time.Duration, now func() time.Time) *limiter {
	return &limiter{
		bucket:  rate.NewLimiter(rps, burst),
		maxWait: maxWait,
		now:     now,
	}
}

// acquire waits out a short Retry-After, then waits for a token, each at most
// maxWait and never past ctx. It returns a Throttled *failure.Error while a longer
// Retry-After runs or when the bucket would make the caller wait too long.
func (l *limiter) acquire(ctx context.Context, op string) error {
	if err := l.waitThrottle(ctx, op); err != nil {
		return err
	}
	r := l.bucket.Reserve()
	if !r.OK() {
		return &failure.Error{Seam: Seam, Op: op, Class: failure.Throttled, RetryAfter: l.maxWait,
			Message: "client-side request rate limit reached"}
	}
	delay := r.Delay()
	if delay == 0 {
		return nil
	}
	if delay > l.maxWait {
		r.Cancel()
		return &failure.Error{Seam: Seam, Op: op, Class: failure.Throttled, RetryAfter: delay,
			Message: "client-side request rate limit reached"}
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		r.Cancel()
		return &failure.Error{Seam: Seam, Op: op, Class: failure.Transient, Message: "waiting for the client-side rate limit: " + ctx.Err().Error(), Err: ctx.Err()}
	}
}

// waitThrottle holds a call while a short Retry-After runs. A reconcile then
// goes on where it was, rather than failing and starting again with the
// reads it had already made: when the API throttled often, those repeated
// reads were most of the calls that reached it (make bench, throttling).
func (l *limiter) waitThrottle(ctx context.Context, op string) error {
	wait := l.remaining()
	if wait <= 0 {
		return nil
	}
	if wait <= l.maxWait {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return &failure.Error{Seam: Seam, Op: op, Class: failure.Transient, Message: "waiting for the API's Retry-After: " + ctx.Err().Error(), Err: ctx.Err()}
		}
		// Another answer may have moved the time on meanwhile.
		if wait = l.remaining(); wait <= 0 {
			return nil
		}
	}
	return &failure.Error{Seam: Seam, Op: op, Class: failure.Throttled, RetryAfter: wait,
		Message: "rate limited by the API, not calling it until the wait is over"}
}

// remaining is how long calls are still refused.
func (l *limiter) remaining() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.throttledUntil.IsZero() {
		return 0
	}
	d := l.throttledUntil.Sub(l.now())
	if d <= 0 {
		l.throttledUntil = time.Time{}
		return 0
	}
	return d
}

// observe learns from an answer's headers: a 429's Retry-After, or a
// zero X-RateLimit-Remaining with its X-RateLimit-Reset. It returns the wait
// it set (0 if none), for the error of a 429.
func (l *limiter) observe(resp *http.Response) time.Duration {
	if resp == nil {
		return 0
	}
	now := l.now()
	var wait time.Duration
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		wait = throttleFor429(resp.Header, now)
	case rateLimitExhausted(resp.Header):
		if d, ok := parseRateLimitReset(resp.Header.Get("X-RateLimit-Reset"), now); ok {
			wait = min(d, maxThrottle)
		}
	}
	if wait <= 0 {
		return 0
	}
	l.mu.Lock()
	if until := now.Add(wait); until.After(l.throttledUntil) {
		l.throttledUntil = until
	}
	l.mu.Unlock()
	return wait
}

func throttleFor429(h http.Header, now time.Time) time.Duration {
	if d, ok := parseRetryAfter(h.Get("Retry-After"), now); ok {
		return min(d, maxThrottle)
	}
	if d, ok := parseRateLimitReset(h.Get("X-RateLimit-Reset"), now); ok && d > 0 {
		return min(d, maxThrottle)
	}
	return defaultThrottle
}

func rateLimitExhausted(h http.Header) bool {
	v := h.Get("X-RateLimit-Remaining")
	if v == "" {
		return false
	}
	n, err := strconv.Atoi(v)
	return err == nil && n <= 0
}
