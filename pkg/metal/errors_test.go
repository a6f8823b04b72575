package metal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

func TestClassifyStatus(t *testing.T) {
	tests := []struct {
		name          string
		status        int
		message       string
		projectScoped bool
		want          failure.Class
	}{
		{name: "401", status: 401, message: "Invalid authentication token", want: failure.Unauthorized},
		{name: "403 on a device", status: 403, message: "You are not authorized to view this device", want: failure.Forbidden},
		{name: "404 by ID", status: 404, message: "Not found", want: failure.NotFound},
		{name: "404 on the project", status: 404, message: "Not found", projectScoped: true, want: failure.Unauthorized},
		{name: "429", status: 429, want: failure.Throttled},
		{name: "400", status: 400, message: "bad json", want: failure.Invalid},
		{name: "422 validation", status: 422, message: "Hostname is invalid", want: failure.Invalid},
		{name: "422 delete while provisioning", status: 422, message: "Cannot delete a device while it is provisioning", want: failure.Busy},
		{name: "422 no servers in metro", status: 422, message: "There aren't available servers in that metro", want: failure.NoCapacity},
		{name: "422 no provisionable servers", status: 422, message: "The facility nrt1 has no provisionable c2.large.arm servers matching your criteria", want: failure.NoCapacity},
		{name: "503 no reservations", status: 503, message: "There are no available hardware reservations for selected plan and facility", want: failure.NoCapacity},
		{name: "503 plain", status: 503, message: "Service Unavailable", want: failure.Transient},
		{name: "500", status: 500, message: "Oh snap, something went wrong!", want: failure.Transient},
		{name: "502", status: 502, want: failure.Transient},
		{name: "301", status: 301, want: failure.Unknown},
		{name: "409", status: 409, want: failure.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, classifyStatus(tt.status, tt.message, tt.projectScoped))
		})
	}
}

func TestMessageFromBody(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{name: "error", body: `{"error":"Not found"}`, want: "Not found"},
		{name: "errors", body: `{"errors":["Hostname is invalid","Plan is invalid"]}`, want: "Hostname is invalid; Plan is invalid"},
		{name: "both", body: `{"errors":["a"],"error":"b"}`, want: "a; b"},
		{name: "non-string errors", body: `{"errors":[{"code":1}]}`, want: `{"code":1}`},
		{name: "empty", body: ``, want: ""},
		{name: "json without message", body: `{"foo":1}`, want: ""},
		{name: "plain text", body: "upstream connect error\nsecond line", want: "upstream connect error"},
		{name: "html", body: "<html><body>502 Bad Gateway</body></html>", want: ""},
		{name: "broken json", body: `{"error":`, want: ""},
		{name: "control characters", body: `{"error":"a\tb\u0000c"}`, want: "a b c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, messageFromBody([]byte(tt.body)))
		})
	}
	t.Run("long messages are cut", func(t *testing.T) {
		msg := messageFromBody([]byte(`{"error":"` + strings.Repeat("x", 1000) + `"}`))
		assert.Len(t, msg, maxMessageLen+len("..."))
	})
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		value  string
		want   time.Duration
		wantOK bool
	}{
		{name: "seconds", value: "30", want: 30 * time.Second, wantOK: true},
		{name: "zero", value: "0", want: 0, wantOK: true},
		{name: "padded", value: " 5 ", want: 5 * time.Second, wantOK: true},
		{name: "http date", value: now.Add(90 * time.Second).Format(http.TimeFormat), want: 90 * time.Second, wantOK: true},
		{name: "date in the past", value: now.Add(-time.Minute).Format(http.TimeFormat), want: 0, wantOK: true},
		{name: "negative", value: "-3", wantOK: false},
		{name: "garbage", value: "soon", wantOK: false},
		{name: "empty", value: "", wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseRetryAfter(tt.value, now)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestNoResponseError(t *testing.T) {
	dialErr := &url.Error{Op: "Get", URL: "http://127.0.0.1:1/metal/v1/devices/x", Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}
	tests := []struct {
		name  string
		err   error
		want  failure.Class
		isCtx error
	}{
		{name: "transport", err: dialErr, want: failure.Transient},
		{name: "timeout", err: &url.Error{Op: "Get", URL: "http://x", Err: context.DeadlineExceeded}, want: failure.Transient, isCtx: context.DeadlineExceeded},
		{name: "canceled", err: fmt.Errorf("wrapped: %w", context.Canceled), want: failure.Transient, isCtx: context.Canceled},
		{name: "request not built", err: errors.New("portAssignInput is required and must be specified"), want: failure.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := noResponseError(OpGetDevice, tt.err)
			assert.Equal(t, tt.want, e.Class)
			assert.Zero(t, e.StatusCode)
			assert.NotEmpty(t, e.Message)
			if tt.isCtx != nil {
				assert.ErrorIs(t, e, tt.isCtx)
			}
		})
	}
}

func TestHelpers(t *testing.T) {
	notFound := fmt.Errorf("reading device: %w", &failure.Error{Seam: Seam, Op: OpGetDevice, StatusCode: 404, Class: failure.NotFound})
	throttled := &failure.Error{Seam: Seam, Op: OpGetDevice, StatusCode: 429, Class: failure.Throttled, RetryAfter: 7 * time.Second}
	tests := []struct {
		name          string
		err           error
		wantClass     failure.Class
		notFound      bool
		auth          bool
		throttled     bool
		transient     bool
		wantRetryWait time.Duration
	}{
		{name: "nil", err: nil, wantClass: failure.Unknown},
		{name: "wrapped not found", err: notFound, wantClass: failure.NotFound, notFound: true},
		{name: "unauthorized", err: &failure.Error{Seam: Seam, Class: failure.Unauthorized}, wantClass: failure.Unauthorized, auth: true},
		{name: "forbidden", err: &failure.Error{Seam: Seam, Class: failure.Forbidden}, wantClass: failure.Forbidden, auth: true},
		{name: "throttled", err: throttled, wantClass: failure.Throttled, throttled: true, wantRetryWait: 7 * time.Second},
		{name: "transient", err: &failure.Error{Seam: Seam, Class: failure.Transient}, wantClass: failure.Transient, transient: true},
		{name: "bare context error", err: context.DeadlineExceeded, wantClass: failure.Transient, transient: true},
		{name: "foreign error", err: errors.New("boom"), wantClass: failure.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wantClass, failure.ClassOf(tt.err))
			assert.Equal(t, tt.notFound, IsNotFound(tt.err))
			assert.Equal(t, tt.auth, IsAuth(tt.err))
			assert.Equal(t, tt.throttled, IsThrottled(tt.err))
			assert.Equal(t, tt.transient, IsTransient(tt.err))
			assert.Equal(t, tt.wantRetryWait, failure.RetryAfter(tt.err))
		})
	}
}

func TestErrorString(t *testing.T) {
	e := &failure.Error{Seam: Seam, Op: OpDeleteDevice, StatusCode: 422, Class: failure.Busy, Message: "Cannot delete a device while it is provisioning"}
	assert.Equal(t, "metal DeleteDevice: 422 Busy: Cannot delete a device while it is provisioning", e.Error())

	e = &failure.Error{Seam: Seam, Op: OpGetDevice, Class: failure.Throttled, RetryAfter: 1500 * time.Millisecond}
	assert.Equal(t, "metal GetDevice: Throttled (retry after 2s)", e.Error())
}
