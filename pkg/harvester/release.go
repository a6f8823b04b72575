package harvester

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// ErrReleaseMissing says a release artifact does not exist where it should.
var ErrReleaseMissing = errors.New("release artifact not found")

// How long a check's answer is kept: a release, once published, stays; a
// missing one may be published soon; an unanswered check is asked again.
const (
	releaseFoundTTL   = 24 * time.Hour
	releaseMissingTTL = 10 * time.Minute
	releaseUnknownTTL = time.Minute
)

// ReleaseChecker asks whether an installer artifact (the ISO) exists before
// a paid server is created to install it: a version that was never released
// (a typo such as v9.9.9) otherwise fails only at the startup timeout, after
// the server ran for nothing. Answers are kept per URL.
type ReleaseChecker struct {
	client *http.Client
	now    func() time.Time

	mu      sync.Mutex
	answers map[string]releaseAnswer
}

type releaseAnswer struct {
	at  time.Time
	err error
}

// NewReleaseChecker checks over transport (nil: the default, which honours
// the proxy environment variables), each request bounded by timeout.
func NewReleaseChecker(transport http.RoundTripper, timeout time.Duration) *ReleaseChecker {
	if transport == nil {
		transport = http.DefaultTransport
	}
	return &ReleaseChecker{
		client:  &http.Client{Transport: transport, Timeout: timeout},
		now:     time.Now,
		answers: map[string]releaseAnswer{},
	}
}

// Check returns nil when url answers a HEAD with 2xx (after redirects), an
// error wrapping ErrReleaseMissing when it answers 403, 404 or 410 (object
// stores answer 403 for a missing object), and another error when it cannot
// tell (unreachable, 5xx), which callers should not treat as missing.
func (c *ReleaseChecker) Check(ctx context.Context, url string) error {
	c.mu.Lock()
	a, ok := c.answers[url]
	c.mu.Unlock()
	if ok && c.now().Sub(a.at) < ttlOf(a.err) {
		return a.err
	}
	err := c.head(ctx, url)
	c.mu.Lock()
	c.answers[url] = releaseAnswer{at: c.now(), err: err}
	c.mu.Unlock()
	return err
}

func ttlOf(err error) time.Duration {
	switch {
	case err == nil:
		return releaseFoundTTL
	case errors.Is(err, ErrReleaseMissing):
		return releaseMissingTTL
	default:
		return releaseUnknownTTL
	}
}

func (c *ReleaseChecker) head(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, url, nil)
	if err != nil {
		return fmt.Errorf("checking %s: %w", url, err)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("checking %s: %w", url, err)
	}
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusNotFound, resp.StatusCode == http.StatusGone, resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%w: %s answered %s", ErrReleaseMissing, url, resp.Status)
	default:
		return fmt.Errorf("checking %s: answered %s", url, resp.Status)
	}
}
