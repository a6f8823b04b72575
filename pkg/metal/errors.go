package metal

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

// Seam names the Metal client's errors (failure.Error.Seam). Its classes
// are chosen from the HTTP status code first; the API's message only
// refines a 422 or a 503. Besides the shared classes it answers Forbidden
// (a 403, ambiguous) and NoCapacity; Unknown covers a 3xx, an unexpected
// 4xx, or a 2xx whose body could not be decoded (the server may have acted
// on the request): treat it like Transient and surface the message.
// Unauthorized is also a 404 on a project-scoped call (the project ID in
// the credentials is wrong). Messages never contain the token.
const Seam = "metal"

// IsNotFound reports whether the object addressed by ID is gone.
func IsNotFound(err error) bool { return err != nil && failure.ClassOf(err) == failure.NotFound }

// IsAuth reports a credentials or permission problem (401, 403, or a project
// that does not exist). Never remove a finalizer on such an error.
func IsAuth(err error) bool {
	c := failure.ClassOf(err)
	return err != nil && (c == failure.Unauthorized || c == failure.Forbidden)
}

// IsThrottled reports a rate limit; failure.RetryAfter says how long to
// wait.
func IsThrottled(err error) bool { return err != nil && failure.ClassOf(err) == failure.Throttled }

// IsTransient reports a server or transport failure worth retrying.
func IsTransient(err error) bool { return err != nil && failure.ClassOf(err) == failure.Transient }

// Substrings of the API's 422/503 messages. The API publishes no error codes,
// so the status code picks the class and these only refine it.
var (
	// (observed) "Cannot delete a device while it is provisioning"
	// (redhat-cop/agnosticd #4307); the others are (inferred) variants.
	busyMarkers = []string{
		"while it is", "while it's", "is provisioning", "is deprovisioning",
		"is reinstalling", "in progress", "try again",
	}
	// (observed) "There aren't available servers in that metro" (packngo #246),
	// "There are no available hardware reservations for selected plan and
	// facility" (crosscloudci #131), "The facility nrt1 has no provisionable
	// c2.large.arm servers matching your criteria" (crosscloudci #146), and a
	// 503 "There are ..." on create (cluster-api-provider-packet #191).
	// Matching "capacity" and "not available" is (inferred).
	noCapacityMarkers = []string{
		"no available", "aren't available", "are not available", "not available in",
		"no provisionable", "capacity", "out of stock",
	}
)

func containsAny(s string, markers []string) bool {
	s = strings.ToLower(s)
	for _, m := range markers {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// classifyStatus picks the class of a non-2xx answer.
func classifyStatus(status int, message string, projectScoped bool) failure.Class {
	switch {
	case status == http.StatusUnauthorized:
		return failure.Unauthorized
	case status == http.StatusForbidden:
		return failure.Forbidden
	case status == http.StatusNotFound && projectScoped:
		return failure.Unauthorized
	case status == http.StatusNotFound:
		return failure.NotFound
	case status == http.StatusTooManyRequests:
		return failure.Throttled
	case status == http.StatusUnprocessableEntity && containsAny(message, noCapacityMarkers):
		return failure.NoCapacity
	case status == http.StatusUnprocessableEntity && containsAny(message, busyMarkers):
		return failure.Busy
	case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity:
		return failure.Invalid
	case status == http.StatusServiceUnavailable && containsAny(message, noCapacityMarkers):
		return failure.NoCapacity
	case status >= 500:
		return failure.Transient
	default:
		return failure.Unknown
	}
}

// apiErrorBody is the API's error document: {"error":"msg"} or
// {"errors":["a","b"]}.
type apiErrorBody struct {
	Error  string            `json:"error"`
	Errors []json.RawMessage `json:"errors"`
}

const maxMessageLen = 300

// messageFromBody extracts the API's message from an error body. Bodies that
// are not the API's JSON (proxies, load balancers) are kept only when they
// are a short line of text; HTML pages are dropped.
func messageFromBody(body []byte) string {
	trimmed := strings.TrimSpace(string(body))
	if trimmed == "" {
		return ""
	}
	var doc apiErrorBody
	if err := json.Unmarshal(body, &doc); err == nil {
		return joinMessages(doc)
	}
	if strings.HasPrefix(trimmed, "<") || strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[") {
		return ""
	}
	if i := strings.IndexByte(trimmed, '\n'); i >= 0 {
		trimmed = trimmed[:i]
	}
	return clean(trimmed)
}

func joinMessages(doc apiErrorBody) string {
	msgs := make([]string, 0, len(doc.Errors)+1)
	for _, raw := range doc.Errors {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			s = string(raw)
		}
		if s = clean(s); s != "" {
			msgs = append(msgs, s)
		}
	}
	if s := clean(doc.Error); s != "" {
		msgs = append(msgs, s)
	}
	return clean(strings.Join(msgs, "; "))
}

// clean strips control characters and bounds the length, so a message can go
// into a condition or an event as it is.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > maxMessageLen {
		s = s[:maxMessageLen] + "..."
	}
	return s
}

// parseRetryAfter reads a Retry-After header: delay seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(secs) * time.Second, true
	}
	when, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	if d := when.Sub(now); d > 0 {
		return d, true
	}
	return 0, true
}

// parseRateLimitReset reads X-RateLimit-Reset, unix seconds.
func parseRateLimitReset(v string, now time.Time) (time.Duration, bool) {
	secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || secs <= 0 {
		return 0, false
	}
	if d := time.Unix(secs, 0).Sub(now); d > 0 {
		return d, true
	}
	return 0, true
}
