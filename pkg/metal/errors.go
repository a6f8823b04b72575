package metal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Class says what a failed call means for the caller. It is chosen from the
// HTTP status code first; the API's message only refines a 422 or a 503.
type Class int

// Error classes.
const (
	// ClassUnknown is an answer nothing else fits: a 3xx, an unexpected 4xx,
	// or a 2xx whose body could not be decoded (the server may have acted on
	// the request). Treat it like Transient and surface the message.
	ClassUnknown Class = iota
	// ClassNotFound is a 404 for an object addressed by ID: the object is gone.
	ClassNotFound
	// ClassUnauthorized is a 401 (token missing or invalid) or a 404 on a
	// project-scoped call (the project ID in the credentials is wrong). Fix the
	// credentials; never treat it as the object being gone.
	ClassUnauthorized
	// ClassForbidden is a 403. It is ambiguous: the API also answers 403 for a
	// device that failed or was deleted, and users have seen 403 bursts under
	// rate limiting. Confirm with a tag list before treating a device as gone.
	ClassForbidden
	// ClassThrottled is a 429, or a call refused on our side while the API's
	// Retry-After has not passed. RetryAfter says how long to wait.
	ClassThrottled
	// ClassTransient is a 5xx, a transport failure or a timeout: retry later.
	ClassTransient
	// ClassBusy is a 422 for an object in a state that refuses the call for now
	// ("Cannot delete a device while it is provisioning"): retry later.
	ClassBusy
	// ClassInvalid is a 400 or 422 the user has to fix; Message says why.
	ClassInvalid
	// ClassNoCapacity is a 422 or 503 saying no hardware is available for the
	// plan in the metro (or on the reservation): retry much later or elsewhere.
	ClassNoCapacity
)

var classNames = [...]string{
	ClassUnknown:      "Unknown",
	ClassNotFound:     "NotFound",
	ClassUnauthorized: "Unauthorized",
	ClassForbidden:    "Forbidden",
	ClassThrottled:    "Throttled",
	ClassTransient:    "Transient",
	ClassBusy:         "Busy",
	ClassInvalid:      "Invalid",
	ClassNoCapacity:   "NoCapacity",
}

func (c Class) String() string {
	if c < 0 || int(c) >= len(classNames) {
		return "Class(" + strconv.Itoa(int(c)) + ")"
	}
	return classNames[c]
}

// Error is every failure a Client returns.
type Error struct {
	// Op is the Client method, e.g. "GetDevice".
	Op string
	// StatusCode is the HTTP status, or 0 when there was no response.
	StatusCode int
	Class      Class
	// Message is the API's own message (or the transport failure), safe to
	// show to users: it never contains the token.
	Message string
	// RetryAfter is how long the API asked us to wait, when it said so.
	RetryAfter time.Duration
	// Err is the underlying transport or context error, if any.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("metal ")
	b.WriteString(e.Op)
	b.WriteString(": ")
	if e.StatusCode != 0 {
		b.WriteString(strconv.Itoa(e.StatusCode))
		b.WriteByte(' ')
	}
	b.WriteString(e.Class.String())
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter.Round(time.Second))
	}
	return b.String()
}

// Unwrap gives access to the transport or context error, so
// errors.Is(err, context.DeadlineExceeded) works.
func (e *Error) Unwrap() error { return e.Err }

// ClassOf returns the class of err. Context cancellations and deadlines are
// Transient; any other error that is not an *Error is Unknown.
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return ClassTransient
	}
	return ClassUnknown
}

// IsNotFound reports whether the object addressed by ID is gone.
func IsNotFound(err error) bool { return err != nil && ClassOf(err) == ClassNotFound }

// IsAuth reports a credentials or permission problem (401, 403, or a project
// that does not exist). Never remove a finalizer on such an error.
func IsAuth(err error) bool {
	c := ClassOf(err)
	return err != nil && (c == ClassUnauthorized || c == ClassForbidden)
}

// IsThrottled reports a rate limit; RetryAfter says how long to wait.
func IsThrottled(err error) bool { return err != nil && ClassOf(err) == ClassThrottled }

// IsTransient reports a server or transport failure worth retrying.
func IsTransient(err error) bool { return err != nil && ClassOf(err) == ClassTransient }

// RetryAfter returns the wait the API asked for, or 0.
func RetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

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
func classifyStatus(status int, message string, projectScoped bool) Class {
	switch {
	case status == http.StatusUnauthorized:
		return ClassUnauthorized
	case status == http.StatusForbidden:
		return ClassForbidden
	case status == http.StatusNotFound && projectScoped:
		return ClassUnauthorized
	case status == http.StatusNotFound:
		return ClassNotFound
	case status == http.StatusTooManyRequests:
		return ClassThrottled
	case status == http.StatusUnprocessableEntity && containsAny(message, noCapacityMarkers):
		return ClassNoCapacity
	case status == http.StatusUnprocessableEntity && containsAny(message, busyMarkers):
		return ClassBusy
	case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity:
		return ClassInvalid
	case status == http.StatusServiceUnavailable && containsAny(message, noCapacityMarkers):
		return ClassNoCapacity
	case status >= 500:
		return ClassTransient
	default:
		return ClassUnknown
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
