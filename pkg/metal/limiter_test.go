package metal

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

// testClock is a settable clock for the throttle bookkeeping.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock {
	return &testClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func answer(status int, headers map[string]string) *http.Response {
	h := http.Header{}
	for k, v := range headers {
		h.Set(k, v)
	}
	return &http.Response{StatusCode: status, Header: h}
}

func TestLimiterThrottle(t *testing.T) {
	clock := newTestClock()
	tests := []struct {
		name     string
		resp     *http.Response
		wantWait time.Duration
	}{
		{name: "429 with seconds", resp: answer(429, map[string]string{"Retry-After": "30"}), wantWait: 30 * time.Second},
		{name: "429 with a date", resp: answer(429, map[string]string{"Retry-After": clock.Now().Add(45 * time.Second).Format(http.TimeFormat)}), wantWait: 45 * time.Second},
		{name: "429 with reset only", resp: answer(429, map[string]string{"X-RateLimit-Reset": strconv.FormatInt(clock.Now().Add(20*time.Second).Unix(), 10)}), wantWait: 20 * time.Second},
		{name: "429 without a hint", resp: answer(429, nil), wantWait: defaultThrottle},
		{name: "429 with a huge wait is capped", resp: answer(429, map[string]string{"Retry-After": "86400"}), wantWait: maxThrottle},
		{name: "429 with zero", resp: answer(429, map[string]string{"Retry-After": "0"}), wantWait: 0},
		{name: "200 with nothing remaining", resp: answer(200, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(clock.Now().Add(12*time.Second).Unix(), 10)}), wantWait: 12 * time.Second},
		{name: "200 with requests remaining", resp: answer(200, map[string]string{"X-RateLimit-Remaining": "3", "X-RateLimit-Reset": strconv.FormatInt(clock.Now().Add(12*time.Second).Unix(), 10)}), wantWait: 0},
		{name: "503 with Retry-After does not throttle", resp: answer(503, map[string]string{"Retry-After": "30"}), wantWait: 0},
		{name: "no response", resp: nil, wantWait: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLimiter(rate.Inf, 1, time.Second, clock.Now)
			assert.Equal(t, tt.wantWait, l.observe(tt.resp))
			err := l.acquire(context.Background(), OpGetDevice)
			if tt.wantWait == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, IsThrottled(err))
			assert.Equal(t, tt.wantWait, failure.RetryAfter(err))
		})
	}
}

func TestLimiterFastFailsUntilTheWaitIsOver(t *testing.T) {
	clock := newTestClock()
	l := newLimiter(rate.Inf, 1, time.Second, clock.Now)
	l.observe(answer(429, map[string]string{"Retry-After": "10"}))

	clock.Advance(4 * time.Second)
	err := l.acquire(context.Background(), OpGetDevice)
	require.Error(t, err)
	assert.Equal(t, 6*time.Second, failure.RetryAfter(err))

	// A shorter Retry-After does not shorten the wait already set.
	l.observe(answer(429, map[string]string{"Retry-After": "1"}))
	assert.Equal(t, 6*time.Second, failure.RetryAfter(l.acquire(context.Background(), OpGetDevice)))

	clock.Advance(6 * time.Second)
	require.NoError(t, l.acquire(context.Background(), OpGetDevice))
}

func TestLimiterBucket(t *testing.T) {
	clock := newTestClock()

	t.Run("a wait beyond maxWait fails as throttled", func(t *testing.T) {
		l := newLimiter(rate.Every(time.Hour), 1, time.Second, clock.Now)
		require.NoError(t, l.acquire(context.Background(), OpGetDevice))
		err := l.acquire(context.Background(), OpGetDevice)
		require.Error(t, err)
		assert.True(t, IsThrottled(err))
		assert.Greater(t, failure.RetryAfter(err), time.Minute)
	})

	t.Run("a cancelled context stops the wait", func(t *testing.T) {
		l := newLimiter(rate.Every(time.Minute), 1, time.Hour, clock.Now)
		require.NoError(t, l.acquire(context.Background(), OpGetDevice))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := l.acquire(ctx, OpGetDevice)
		require.Error(t, err)
		assert.True(t, IsTransient(err))
		assert.ErrorIs(t, err, context.Canceled)
	})

	t.Run("a short wait is served", func(t *testing.T) {
		l := newLimiter(rate.Every(time.Millisecond), 1, time.Second, clock.Now)
		for range 3 {
			require.NoError(t, l.acquire(context.Background(), OpGetDevice))
		}
	})
}

// A call made while a short Retry-After runs waits it out and goes on; a
// cancelled context ends the wait.
func TestLimiterWaitsOutAShortRetryAfter(t *testing.T) {
	l := newLimiter(rate.Inf, 1, 5*time.Second, time.Now)
	l.observe(answer(429, map[string]string{"Retry-After": "1"}))
	start := time.Now()
	require.NoError(t, l.acquire(context.Background(), OpGetDevice))
	assert.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond, "the call went out before the Retry-After was over")

	l.observe(answer(429, map[string]string{"Retry-After": "1"}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := l.acquire(ctx, OpGetDevice)
	require.Error(t, err)
	assert.True(t, IsTransient(err))
	assert.ErrorIs(t, err, context.Canceled)
}
