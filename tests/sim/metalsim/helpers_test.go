package metalsim

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	testToken    = "token-project-a"
	testProject  = "3a5e0c2c-4d1b-4c6e-9f0a-1b2c3d4e5f60"
	otherToken   = "token-project-b"
	otherProject = "7b8c9d0e-1f2a-4b3c-8d4e-5f6a7b8c9d0e"
	testIPXEURL  = "https://boot.example.com/harvester.ipxe"
)

var testStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type env struct {
	t      testing.TB
	ctx    context.Context
	sim    *Simulator
	clock  *FakeClock
	srv    *httptest.Server
	client *metalv1.APIClient
	other  *metalv1.APIClient
}

type envOption func(*Options)

func withTimings(t Timings) envOption { return func(o *Options) { o.Timings = t } }

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	clock := NewFakeClock(testStart)
	o := Options{Clock: clock, Timings: DefaultTimings(), Seed: 42}
	for _, opt := range opts {
		opt(&o)
	}
	sim := New(o)
	sim.AddProject(testToken, testProject)
	sim.AddProject(otherToken, otherProject)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return &env{
		t:      t,
		ctx:    context.Background(),
		sim:    sim,
		clock:  clock,
		srv:    srv,
		client: newClient(srv.URL+apiPrefix, testToken),
		other:  newClient(srv.URL+apiPrefix, otherToken),
	}
}

// newClient builds the real SDK client the way pkg/metal does.
func newClient(baseURL, token string) *metalv1.APIClient {
	cfg := metalv1.NewConfiguration()
	cfg.Servers = metalv1.ServerConfigurations{{URL: baseURL}}
	if token != "" {
		cfg.AddDefaultHeader("X-Auth-Token", token)
	}
	cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	return metalv1.NewAPIClient(cfg)
}

func ipxeInput(hostname string) metalv1.DeviceCreateInMetroInput {
	in := metalv1.DeviceCreateInMetroInput{
		Metro:           "da",
		Plan:            "c3.small.x86",
		OperatingSystem: OSCustomIPXE,
		Hostname:        ptr(hostname),
		IpxeScriptUrl:   ptr(testIPXEURL),
		AlwaysPxe:       ptr(false),
		BillingCycle:    ptr(metalv1.DEVICECREATEINPUTBILLINGCYCLE_HOURLY),
		Tags:            []string{"harvester-equinix-addon", "pool:" + hostname},
		Userdata:        ptr("#cloud-config\nhostname: " + hostname + "\n"),
	}
	return in
}

func (e *env) create(in metalv1.DeviceCreateInMetroInput) *metalv1.Device {
	e.t.Helper()
	d, resp, err := e.client.DevicesApi.CreateDevice(e.ctx, testProject).
		CreateDeviceRequest(metalv1.CreateDeviceRequest{DeviceCreateInMetroInput: &in}).Execute()
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusCreated, resp.StatusCode)
	return d
}

// createActive creates a custom iPXE device and advances the clock until
// it is active.
func (e *env) createActive(hostname string, mutate ...func(*metalv1.DeviceCreateInMetroInput)) *metalv1.Device {
	e.t.Helper()
	in := ipxeInput(hostname)
	for _, m := range mutate {
		m(&in)
	}
	d := e.create(in)
	t := DefaultTimings()
	e.clock.Advance(t.Queue + t.IPXEBoot)
	got := e.get(d.GetId())
	require.Equal(e.t, metalv1.DEVICESTATE_ACTIVE, got.GetState())
	return got
}

func (e *env) get(id string, include ...string) *metalv1.Device {
	e.t.Helper()
	req := e.client.DevicesApi.FindDeviceById(e.ctx, id)
	if len(include) > 0 {
		req = req.Include(include)
	}
	d, _, err := req.Execute()
	require.NoError(e.t, err)
	return d
}

func (e *env) port(d *metalv1.Device, name string) *metalv1.Port {
	e.t.Helper()
	for i := range d.NetworkPorts {
		if d.NetworkPorts[i].GetName() == name {
			return &d.NetworkPorts[i]
		}
	}
	e.t.Fatalf("device %s has no port %s", d.GetId(), name)
	return nil
}

func (e *env) getPort(id string) *metalv1.Port {
	e.t.Helper()
	p, _, err := e.client.PortsApi.FindPortById(e.ctx, id).Include([]string{"virtual_networks"}).Execute()
	require.NoError(e.t, err)
	return p
}

// requireAPIError asserts an SDK error with the given status whose text
// contains want.
// requireAPIError asserts that err is the API's answer of status, whose
// text holds want.
func requireAPIError(t *testing.T, resp *http.Response, err error, status int, want string) {
	t.Helper()
	_ = apiErrorOf(t, resp, err, status, want)
}

// apiErrorOf is requireAPIError that returns the API's error, for its model.
func apiErrorOf(t *testing.T, resp *http.Response, err error, status int, want string) *metalv1.GenericOpenAPIError {
	t.Helper()
	require.Error(t, err)
	var apiErr *metalv1.GenericOpenAPIError
	require.True(t, errors.As(err, &apiErr), "want *metalv1.GenericOpenAPIError, got %T: %v", err, err)
	require.NotNil(t, resp)
	require.Equal(t, status, resp.StatusCode, "body: %s", apiErr.Body())
	if want != "" {
		assert.Contains(t, err.Error(), want)
	}
	return apiErr
}

// modelMessages returns the messages of a decoded metalv1.Error model.
func modelMessages(t *testing.T, apiErr *metalv1.GenericOpenAPIError) []string {
	t.Helper()
	m, ok := apiErr.Model().(metalv1.Error)
	require.True(t, ok, "model is %T", apiErr.Model())
	out := append([]string{}, m.GetErrors()...)
	if m.GetError() != "" {
		out = append(out, m.GetError())
	}
	return out
}

func durationOf(ns int64) time.Duration { return time.Duration(ns) }
