package metal

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
)

// Tests of the SDK-backed client against hand-written answers; the
// behaviour against a faithful API is in simulator_test.go.

type httpFixture struct {
	client Client
	reg    *prometheus.Registry
	clock  *testClock
	hits   *atomic.Int32
}

func newHTTPFixture(t *testing.T, handler http.HandlerFunc) *httpFixture {
	t.Helper()
	hits := &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	reg := prometheus.NewRegistry()
	clock := newTestClock()
	p, err := NewProvider(Options{BaseURL: srv.URL, Registerer: reg, Now: clock.Now, RequestsPerSecond: -1, Timeout: 5 * time.Second})
	require.NoError(t, err)
	c, err := p.Client(Credentials{Token: secretToken, ProjectID: "proj-1"})
	require.NoError(t, err)
	return &httpFixture{client: c, reg: reg, clock: clock, hits: hits}
}

func reply(w http.ResponseWriter, status int, body string, headers map[string]string) {
	for k, v := range headers {
		w.Header().Set(k, v)
	}
	if body != "" && w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

func requestCount(t *testing.T, reg *prometheus.Registry, op, code string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "equinix_addon_metal_api_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["operation"] == op && labels["code"] == code {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestRequestHeaders(t *testing.T) {
	var got http.Header
	f := newHTTPFixture(t, func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		assert.Equal(t, "/metal/v1/devices/dev-1", r.URL.Path)
		reply(w, 200, `{"id":"dev-1","hostname":"node-1","state":"active"}`, nil)
	})
	d, err := f.client.GetDevice(context.Background(), "dev-1")
	require.NoError(t, err)
	assert.Equal(t, "node-1", d.Hostname)
	assert.Equal(t, []string{secretToken}, got.Values("X-Auth-Token"), "exactly one auth header")
	assert.True(t, strings.HasPrefix(got.Get("User-Agent"), "harvester-equinix-addon/"), got.Get("User-Agent"))
	assert.Contains(t, got.Get("User-Agent"), "equinix-sdk-go/")
}

func TestErrorClassificationOverHTTP(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		body        string
		headers     map[string]string
		op          func(Client) error
		wantClass   failure.Class
		wantMessage string
		wantRetry   time.Duration
	}{
		{name: "401", status: 401, body: `{"error":"Invalid authentication token"}`, wantClass: failure.Unauthorized, wantMessage: "Invalid authentication token"},
		{name: "403", status: 403, body: `{"errors":["You are not authorized to view this device"]}`, wantClass: failure.Forbidden, wantMessage: "You are not authorized to view this device"},
		{name: "404", status: 404, body: `{"error":"Not found"}`, wantClass: failure.NotFound, wantMessage: "Not found"},
		{name: "404 without a body", status: 404, wantClass: failure.NotFound, wantMessage: "Not Found"},
		{name: "404 on the project", status: 404, body: `{"error":"Not found"}`, wantClass: failure.Unauthorized,
			op: func(c Client) error { _, err := c.ListDevices(context.Background(), ListDevicesOptions{}); return err }},
		{name: "429 with seconds", status: 429, body: `{"error":"Too many requests"}`, headers: map[string]string{"Retry-After": "42"}, wantClass: failure.Throttled, wantMessage: "Too many requests", wantRetry: 42 * time.Second},
		{name: "500 html", status: 500, body: "<html>oops</html>", headers: map[string]string{"Content-Type": "text/html"}, wantClass: failure.Transient, wantMessage: "Internal Server Error"},
		{name: "502 text", status: 502, body: "upstream connect error", headers: map[string]string{"Content-Type": "text/plain"}, wantClass: failure.Transient, wantMessage: "upstream connect error"},
		{name: "503 with Retry-After", status: 503, body: `{"error":"maintenance"}`, headers: map[string]string{"Retry-After": "5"}, wantClass: failure.Transient, wantMessage: "maintenance", wantRetry: 5 * time.Second},
		{name: "422 busy on delete", status: 422, body: `{"errors":["Cannot delete a device while it is provisioning"]}`, wantClass: failure.Busy,
			op: func(c Client) error { return c.DeleteDevice(context.Background(), "dev-1", false) }},
		{name: "422 no capacity on create", status: 422, body: `{"errors":["There aren't available servers in that metro"]}`, wantClass: failure.NoCapacity,
			op: func(c Client) error {
				_, err := c.CreateDevice(context.Background(), CreateDeviceRequest{Metro: "da"})
				return err
			}},
		{name: "422 invalid", status: 422, body: `{"errors":["Hostname is invalid"]}`, wantClass: failure.Invalid, wantMessage: "Hostname is invalid",
			op: func(c Client) error {
				_, err := c.UpdateDevice(context.Background(), "dev-1", DeviceUpdate{Hostname: new("bad name")})
				return err
			}},
		{name: "2xx the SDK cannot decode", status: 200, body: `{"id":"dev-1","state":"booting"}`, wantClass: failure.Unknown},
		{name: "token echoed back is scrubbed", status: 401, body: `{"error":"token ` + secretToken + ` is invalid"}`, wantClass: failure.Unauthorized, wantMessage: "token <redacted> is invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newHTTPFixture(t, func(w http.ResponseWriter, _ *http.Request) { reply(w, tt.status, tt.body, tt.headers) })
			op := tt.op
			if op == nil {
				op = func(c Client) error { _, err := c.GetDevice(context.Background(), "dev-1"); return err }
			}
			err := op(f.client)
			require.Error(t, err)
			var e *failure.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.wantClass, e.Class, e.Error())
			assert.Equal(t, tt.status, e.StatusCode)
			if tt.wantMessage != "" {
				assert.Equal(t, tt.wantMessage, e.Message)
			}
			assert.Equal(t, tt.wantRetry, e.RetryAfter)
			assert.NotContains(t, e.Error(), secretToken)
		})
	}
}

func TestTransportFailureIsTransient(t *testing.T) {
	f := newHTTPFixture(t, func(w http.ResponseWriter, _ *http.Request) {
		hj, ok := w.(http.Hijacker)
		require.True(t, ok)
		conn, _, err := hj.Hijack()
		require.NoError(t, err)
		_ = conn.Close()
	})
	_, err := f.client.GetDevice(context.Background(), "dev-1")
	require.Error(t, err)
	assert.True(t, IsTransient(err), err.Error())
	var e *failure.Error
	require.ErrorAs(t, err, &e)
	assert.Zero(t, e.StatusCode)
	assert.Equal(t, 1.0, requestCount(t, f.reg, OpGetDevice, codeError))
}

func TestContextDeadlineIsTransient(t *testing.T) {
	release := make(chan struct{})
	f := newHTTPFixture(t, func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := f.client.GetDevice(ctx, "dev-1")
	require.Error(t, err)
	assert.True(t, IsTransient(err))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestThrottledClientFailsFastWithoutCallingTheAPI(t *testing.T) {
	var calls atomic.Int32
	f := newHTTPFixture(t, func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) == 1 {
			reply(w, 429, `{"error":"Too many requests"}`, map[string]string{"Retry-After": "30", "X-RateLimit-Remaining": "0"})
			return
		}
		reply(w, 200, `{"id":"dev-1","state":"active"}`, map[string]string{"X-RateLimit-Remaining": "41"})
	})
	ctx := context.Background()

	_, err := f.client.GetDevice(ctx, "dev-1")
	require.Error(t, err)
	assert.True(t, IsThrottled(err))
	assert.Equal(t, 30*time.Second, failure.RetryAfter(err))

	f.clock.Advance(10 * time.Second)
	for _, call := range []func() error{
		func() error { _, err := f.client.GetDevice(ctx, "dev-1"); return err },
		func() error { return f.client.DeleteDevice(ctx, "dev-1", false) },
	} {
		err := call()
		require.Error(t, err)
		assert.True(t, IsThrottled(err))
		assert.Equal(t, 20*time.Second, failure.RetryAfter(err))
	}
	assert.Equal(t, int32(1), f.hits.Load(), "no request while throttled")

	f.clock.Advance(20 * time.Second)
	d, err := f.client.GetDevice(ctx, "dev-1")
	require.NoError(t, err)
	assert.Equal(t, "dev-1", d.ID)
	assert.Equal(t, int32(2), f.hits.Load())

	assert.Equal(t, 1.0, requestCount(t, f.reg, OpGetDevice, "429"))
	assert.Equal(t, 1.0, requestCount(t, f.reg, OpGetDevice, codeThrottled))
	assert.Equal(t, 1.0, requestCount(t, f.reg, OpDeleteDevice, codeThrottled))
	assert.Equal(t, 1.0, requestCount(t, f.reg, OpGetDevice, "200"))
	assert.Equal(t, 41.0, testutil.ToFloat64(f.client.(*sdkClient).metrics.remaining))
	assert.Equal(t, 1, testutil.CollectAndCount(f.reg, "equinix_addon_metal_api_request_duration_seconds"), "only GetDevice reached the API")
}

func TestCreateDeviceIsNeverResent(t *testing.T) {
	var posts atomic.Int32
	f := newHTTPFixture(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		reply(w, 500, `{"error":"Oh snap, something went wrong!"}`, nil)
	})
	_, err := f.client.CreateDevice(context.Background(), CreateDeviceRequest{Hostname: "node-1", Metro: "da", Plan: "c3.small.x86", OperatingSystem: OperatingSystemCustomIPXE})
	require.Error(t, err)
	assert.True(t, IsTransient(err))
	assert.Equal(t, int32(1), posts.Load())
}

func TestPaginationStopsWithoutMeta(t *testing.T) {
	f := newHTTPFixture(t, func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "100", r.URL.Query().Get("per_page"))
		reply(w, 200, `{"devices":[{"id":"a","tags":["t"]},{"id":"b","tags":["t"]}]}`, nil)
	})
	devices, err := f.client.ListDevices(context.Background(), ListDevicesOptions{Tag: "t"})
	require.NoError(t, err)
	assert.Len(t, devices, 2)
	assert.Equal(t, int32(1), f.hits.Load())
}

func TestEmptyIDsAreRefusedLocally(t *testing.T) {
	f := newHTTPFixture(t, func(w http.ResponseWriter, _ *http.Request) { reply(w, 200, `{}`, nil) })
	ctx := context.Background()
	calls := map[string]func() error{
		OpGetDevice:    func() error { _, err := f.client.GetDevice(ctx, ""); return err },
		OpDeleteDevice: func() error { return f.client.DeleteDevice(ctx, " ", true) },
		OpAssignVLAN:   func() error { return f.client.AssignVLAN(ctx, "port-1", "") },
		OpUnassignIP:   func() error { return f.client.UnassignIP(ctx, "") },
		OpGetIP:        func() error { _, err := f.client.GetIP(ctx, ""); return err },
		OpListBGPSessions: func() error {
			_, err := f.client.ListBGPSessions(ctx, "")
			return err
		},
		OpGetBGPSession:    func() error { _, err := f.client.GetBGPSession(ctx, " "); return err },
		OpDeleteBGPSession: func() error { return f.client.DeleteBGPSession(ctx, "") },
	}
	for op, call := range calls {
		t.Run(op, func(t *testing.T) {
			err := call()
			require.Error(t, err)
			assert.Equal(t, failure.Invalid, failure.ClassOf(err))
		})
	}
	assert.Zero(t, f.hits.Load())
}

func TestRequestBodies(t *testing.T) {
	var body map[string]any
	f := newHTTPFixture(t, func(w http.ResponseWriter, r *http.Request) {
		body = nil
		require.NoError(t, json.NewDecoder(r.Body).Decode(&body))
		reply(w, 200, `{"id":"dev-1"}`, nil)
	})
	ctx := context.Background()

	t.Run("update sends only the fields that are set", func(t *testing.T) {
		_, err := f.client.UpdateDevice(ctx, "dev-1", DeviceUpdate{Hostname: new("node-2"), Tags: &[]string{}})
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"hostname": "node-2", "tags": []any{}}, body)
	})

	t.Run("clearing userdata sends an empty string", func(t *testing.T) {
		empty := redact.Sensitive("")
		_, err := f.client.UpdateDevice(ctx, "dev-1", DeviceUpdate{Userdata: &empty})
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"userdata": ""}, body)
	})

	t.Run("create", func(t *testing.T) {
		_, err := f.client.CreateDevice(ctx, CreateDeviceRequest{
			Hostname: "node-1", Plan: "c3.small.x86", Metro: "da", BillingCycle: BillingHourly,
			OperatingSystem: OperatingSystemCustomIPXE, IPXEScriptURL: "https://boot/x.ipxe",
			Userdata: "#cloud-config", Tags: []string{"a"},
		})
		require.NoError(t, err)
		assert.Equal(t, map[string]any{
			"hostname": "node-1", "plan": "c3.small.x86", "metro": "da", "billing_cycle": "hourly",
			"operating_system": "custom_ipxe", "ipxe_script_url": "https://boot/x.ipxe", "always_pxe": false,
			"userdata": "#cloud-config", "tags": []any{"a"},
		}, body)
	})

	t.Run("reinstall", func(t *testing.T) {
		require.NoError(t, f.client.Reinstall(ctx, "dev-1", ReinstallRequest{OperatingSystem: "custom_ipxe", PreserveData: true, DeprovisionFast: true}))
		assert.Equal(t, map[string]any{"type": "reinstall", "operating_system": "custom_ipxe", "preserve_data": true, "deprovision_fast": true}, body)
	})
}

func TestConcurrentUse(t *testing.T) {
	f := newHTTPFixture(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/dev-7") {
			reply(w, 429, `{"error":"slow down"}`, map[string]string{"Retry-After": "60"})
			return
		}
		reply(w, 200, `{"id":"dev-1","state":"active"}`, map[string]string{"X-RateLimit-Remaining": "10"})
	})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			_, err := f.client.GetDevice(context.Background(), fmt.Sprintf("dev-%d", i))
			if err != nil {
				assert.True(t, IsThrottled(err), err.Error())
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, f.hits.Load(), int32(20))
}
