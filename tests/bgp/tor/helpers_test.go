package tor_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/tests/bgp/tor"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

const (
	token   = "tor-token"
	project = "5d9a8f3e-2b4c-4e6f-8a1b-3c5d7e9f1a2b"
)

// env is a simulator with routers attached and the real SDK pointed at it.
type env struct {
	t      *testing.T
	ctx    context.Context
	sim    *metalsim.Simulator
	tor    *tor.ToR
	url    string
	client *metalv1.APIClient
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sim := metalsim.New(metalsim.Options{Clock: metalsim.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)), Seed: 3})
	sim.AddProject(token, project)
	tr, err := tor.Start(ctx, sim, tor.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tr.Close()) })
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	cfg := metalv1.NewConfiguration()
	cfg.Servers = metalv1.ServerConfigurations{{URL: srv.URL + "/metal/v1"}}
	cfg.AddDefaultHeader("X-Auth-Token", token)
	cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	return &env{t: t, ctx: ctx, sim: sim, tor: tr, url: srv.URL, client: metalv1.NewAPIClient(cfg)}
}

// device creates an active device; the zero Timings make every step
// complete on the next request.
func (e *env) device(hostname string) *metalv1.Device {
	e.t.Helper()
	in := metalv1.DeviceCreateInMetroInput{
		Metro: "da", Plan: "c3.small.x86", OperatingSystem: "ubuntu_22_04", Hostname: &hostname,
	}
	d, _, err := e.client.DevicesApi.CreateDevice(e.ctx, project).
		CreateDeviceRequest(metalv1.CreateDeviceRequest{DeviceCreateInMetroInput: &in}).Execute()
	require.NoError(e.t, err)
	got, _, err := e.client.DevicesApi.FindDeviceById(e.ctx, d.GetId()).Execute()
	require.NoError(e.t, err)
	require.Equal(e.t, metalv1.DEVICESTATE_ACTIVE, got.GetState())
	return got
}

func (e *env) enableBGP(md5 string) {
	e.t.Helper()
	in := metalv1.BgpConfigRequestInput{Asn: 65000, DeploymentType: metalv1.BGPCONFIGREQUESTINPUTDEPLOYMENTTYPE_LOCAL}
	if md5 != "" {
		in.Md5 = &md5
	}
	_, err := e.client.BGPApi.RequestBgpConfig(e.ctx, project).BgpConfigRequestInput(in).Execute()
	require.NoError(e.t, err)
}

func (e *env) session(deviceID string) *metalv1.BgpSession {
	e.t.Helper()
	family := metalv1.BGPSESSIONINPUTADDRESSFAMILY_IPV4
	s, _, err := e.client.DevicesApi.CreateBgpSession(e.ctx, deviceID).
		BGPSessionInput(metalv1.BGPSessionInput{AddressFamily: &family}).Execute()
	require.NoError(e.t, err)
	return s
}

func (e *env) sessionStatus(id string) (string, []string) {
	e.t.Helper()
	s, _, err := e.client.BGPApi.FindBgpSessionById(e.ctx, id).Execute()
	require.NoError(e.t, err)
	return s.GetStatus(), s.LearnedRoutes
}

// routedTo polls until prefix is routed to deviceID ("" for nowhere), by
// both the routers and the simulator's record of them.
func (e *env) routedTo(prefix netip.Prefix, deviceID string) {
	e.t.Helper()
	require.Eventually(e.t, func() bool {
		got, ok := e.tor.RouteOf(prefix)
		simGot, simOK := e.sim.RouteOf(prefix)
		if deviceID == "" {
			return !ok && !simOK
		}
		return ok && got == deviceID && simOK && simGot == deviceID
	}, 20*time.Second, 20*time.Millisecond, "%s should be routed to %q; ToR error: %v", prefix, deviceID, e.tor.Err())
}

func (e *env) established(s *tor.Speaker, want int) {
	e.t.Helper()
	require.Eventually(e.t, func() bool {
		n, err := s.Established(e.ctx)
		return err == nil && n == want
	}, 20*time.Second, 20*time.Millisecond, "ToR error: %v", e.tor.Err())
}
