package metal

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

const (
	// perPage is the API's documented maximum page size.
	perPage = 100
	// maxPages stops a list whose pagination never ends (100,000 objects).
	maxPages = 1000
)

// sdkClient implements Client with equinix-sdk-go. The SDK has no retries,
// and this client adds one kind only: a call the API answered 429 is sent
// again once the Retry-After is over, when that is short (see do). Nothing
// else is resent, least of all a create, which could make a second billable
// server.
type sdkClient struct {
	api       *metalv1.APIClient
	projectID string
	// token is kept only to scrub it from messages.
	token   redact.Sensitive
	limiter *limiter
	metrics *metrics
}

func newSDKClient(creds Credentials, baseURL string, hc *http.Client, userAgent string, lim *limiter, m *metrics) *sdkClient {
	cfg := metalv1.NewConfiguration()
	cfg.Servers = metalv1.ServerConfigurations{{URL: baseURL}}
	cfg.HTTPClient = hc
	cfg.UserAgent = userAgent + " " + cfg.UserAgent
	// The default header is the only auth mechanism: adding the context API
	// key as well would send the header twice.
	cfg.AddDefaultHeader("X-Auth-Token", creds.Token)
	return &sdkClient{
		api:       metalv1.NewAPIClient(cfg),
		projectID: creds.ProjectID,
		token:     redact.Sensitive(creds.Token),
		limiter:   lim,
		metrics:   m,
	}
}

var _ Client = (*sdkClient)(nil)

func (c *sdkClient) String() string { return "metal client for project " + c.projectID }

func (c *sdkClient) ProjectID() string { return c.projectID }

// do runs one HTTP exchange of operation op through the rate limiter and the
// metrics, and turns a failure into an *failure.Error. A 429 is an answer the API
// did not act on, so the call is made again after a Retry-After short enough
// to wait (a few times at most): failing instead would end the reconcile and
// make the next one repeat the reads it had made, which, when the API
// throttled often, was most of what reached it (make bench, throttling).
// A create is never made again here: its Instance's next pass looks for the
// device by its tag first, as after any failed create.
func (c *sdkClient) do(ctx context.Context, op string, call func(context.Context) (*http.Response, error)) error {
	for attempt := 1; ; attempt++ {
		err := c.once(ctx, op, call)
		if !IsThrottled(err) || op == OpCreateDevice || attempt == maxThrottledAttempts || failure.RetryAfter(err) > c.limiter.maxWait {
			return err
		}
	}
}

// maxThrottledAttempts bounds the calls do makes for one operation the API
// keeps answering 429.
const maxThrottledAttempts = 4

func (c *sdkClient) once(ctx context.Context, op string, call func(context.Context) (*http.Response, error)) error {
	if err := c.limiter.acquire(ctx, op); err != nil {
		if IsThrottled(err) {
			c.metrics.throttled(op)
		}
		return err
	}
	start := time.Now()
	resp, err := call(ctx)
	c.metrics.observe(op, resp, time.Since(start))
	wait := c.limiter.observe(resp)
	if err == nil {
		return nil
	}
	e := toError(op, resp, err, c.limiter.now())
	if e.Class == failure.Throttled && wait > 0 {
		e.RetryAfter = wait
	}
	e.Message = c.scrub(e.Message)
	return e
}

// scrub removes the token from a message, in case an answer echoed it.
func (c *sdkClient) scrub(msg string) string { return redact.Scrub(msg, c.token) }

func requireID(op, what, id string) error {
	if strings.TrimSpace(id) == "" {
		return &failure.Error{Seam: Seam, Op: op, Class: failure.Invalid, Message: what + " is empty"}
	}
	return nil
}

// toError classifies a failed SDK call on the response status code; the
// error text only supplies the message.
func toError(op string, resp *http.Response, err error, now time.Time) *failure.Error {
	if resp == nil {
		return noResponseError(op, err)
	}
	e := &failure.Error{Seam: Seam, Op: op, StatusCode: resp.StatusCode}
	if resp.StatusCode < 300 {
		var apiErr *metalv1.GenericOpenAPIError
		if errors.As(err, &apiErr) {
			// The server acted on the request but we cannot read the answer.
			e.Class = failure.Unknown
			e.Message = clean("decoding the answer: " + apiErr.Error())
			return e
		}
		e.Class, e.Message, e.Err = failure.Transient, clean("reading the answer: "+err.Error()), err
		return e
	}
	e.Message = sdkMessage(err, resp)
	e.Class = classifyStatus(resp.StatusCode, e.Message, projectScopedOps[op])
	if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), now); ok {
		e.RetryAfter = d
	}
	return e
}

// noResponseError classifies a call that got no answer: a transport failure
// or timeout is Transient; a request the SDK refused to build is Invalid.
func noResponseError(op string, err error) *failure.Error {
	var urlErr *url.Error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.As(err, &urlErr):
		return &failure.Error{Seam: Seam, Op: op, Class: failure.Transient, Message: clean(err.Error()), Err: err}
	default:
		return &failure.Error{Seam: Seam, Op: op, Class: failure.Invalid, Message: clean("building the request: " + err.Error()), Err: err}
	}
}

// sdkMessage reads the API's message from the error body, falling back to
// the status text.
func sdkMessage(err error, resp *http.Response) string {
	var body []byte
	var apiErr *metalv1.GenericOpenAPIError
	if errors.As(err, &apiErr) {
		body = apiErr.Body()
	}
	if msg := messageFromBody(body); msg != "" {
		return msg
	}
	return http.StatusText(resp.StatusCode)
}

// isAlreadyDone reports a 422 whose message says the change is in place.
func isAlreadyDone(err error, markers ...[]string) bool {
	var e *failure.Error
	if !errors.As(err, &e) || e.StatusCode != http.StatusUnprocessableEntity {
		return false
	}
	msg := strings.ToLower(e.Message)
	for _, all := range markers {
		if containsAll(msg, all) {
			return true
		}
	}
	return false
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// paginate fetches every page of a list; fetch gets the page number.
func paginate[T, U any](ctx context.Context, c *sdkClient, op string,
	fetch func(ctx context.Context, page int32) ([]T, *metalv1.Meta, *http.Response, error),
	keep func(*T) (U, bool)) ([]U, error) {
	var all []U
	page := int32(1)
	for range maxPages {
		var items []T
		var meta *metalv1.Meta
		err := c.do(ctx, op, func(ctx context.Context) (resp *http.Response, err error) {
			items, meta, resp, err = fetch(ctx, page)
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		// Convert page by page: the SDK's models (a map of every field
		// besides the struct) of a whole project's devices held at once
		// were most of the controller's peak memory at 2,000 servers.
		for i := range items {
			if u, ok := keep(&items[i]); ok {
				all = append(all, u)
			}
		}
		// Stop on a missing meta as well: the SDK's own loop would fetch
		// page 1 forever when current_page is absent.
		current, last := meta.GetCurrentPage(), meta.GetLastPage()
		if current <= 0 || last <= current {
			return all, nil
		}
		page = current + 1
	}
	return nil, &failure.Error{Seam: Seam, Op: op, Class: failure.Unknown, Message: "the list did not end after 1000 pages"}
}
