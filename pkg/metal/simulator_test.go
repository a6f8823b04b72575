package metal_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/simulator/metalsim"
)

// The SDK-backed client against the in-repo simulator: the real SDK, real
// HTTP, and a fake clock driving both the simulator and our throttle.

const (
	simToken   = "sim-token-a"
	simProject = "3a5e0c2c-4d1b-4c6e-9f0a-1b2c3d4e5f60"
	ipxeURL    = "https://boot.example.com/harvester.ipxe"
)

type simEnv struct {
	ctx    context.Context
	sim    *metalsim.Simulator
	clock  *metalsim.FakeClock
	reg    *prometheus.Registry
	url    string
	client metal.Client
}

func newSimEnv(t *testing.T, timings metalsim.Timings, configure ...func(*metal.Options)) *simEnv {
	t.Helper()
	clock := metalsim.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	sim := metalsim.New(metalsim.Options{Clock: clock, Timings: timings, Seed: 7})
	sim.AddProject(simToken, simProject)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	reg := prometheus.NewRegistry()
	opts := metal.Options{
		BaseURL:           srv.URL,
		Registerer:        reg,
		Now:               clock.Now,
		RequestsPerSecond: -1,
		Timeout:           10 * time.Second,
	}
	for _, c := range configure {
		c(&opts)
	}
	p, err := metal.NewProvider(opts)
	require.NoError(t, err)
	c, err := p.Client(metal.Credentials{Token: simToken, ProjectID: simProject})
	require.NoError(t, err)
	return &simEnv{ctx: context.Background(), sim: sim, clock: clock, reg: reg, url: srv.URL, client: c}
}

func deviceRequest(hostname string, tags ...string) metal.CreateDeviceRequest {
	return metal.CreateDeviceRequest{
		Hostname:        hostname,
		Plan:            "c3.small.x86",
		Metro:           "da",
		BillingCycle:    metal.BillingHourly,
		OperatingSystem: metal.OperatingSystemCustomIPXE,
		IPXEScriptURL:   ipxeURL,
		Userdata:        "#cloud-config\ntoken: join-token-secret",
		Tags:            tags,
	}
}

func (e *simEnv) activeDevice(t *testing.T, hostname string) *metal.Device {
	t.Helper()
	d, err := e.client.CreateDevice(e.ctx, deviceRequest(hostname, "cluster:test"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		got, err := e.client.GetDevice(e.ctx, d.ID)
		return err == nil && got.State == metal.DeviceStateActive
	}, 5*time.Second, 10*time.Millisecond)
	d, err = e.client.GetDevice(e.ctx, d.ID)
	require.NoError(t, err)
	return d
}

func (e *simEnv) count(t *testing.T, op, code string) float64 {
	t.Helper()
	mfs, err := e.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "equinix_addon_metal_api_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var gotOp, gotCode string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "operation":
					gotOp = l.GetValue()
				case "code":
					gotCode = l.GetValue()
				}
			}
			if gotOp == op && gotCode == code {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func statuses(reqs []metalsim.Request) []int {
	out := make([]int, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, r.Status)
	}
	return out
}

func TestSimDeviceLifecycle(t *testing.T) {
	e := newSimEnv(t, metalsim.Timings{})
	d := e.activeDevice(t, "node-1")

	assert.Equal(t, "node-1", d.Hostname)
	assert.Equal(t, "c3.small.x86", d.Plan)
	assert.Equal(t, "da", d.Metro)
	assert.Equal(t, "da11", d.Facility)
	require.NotNil(t, d.PlanDetails, "a device read carries the plan in full")
	assert.Equal(t, "c3.small.x86", d.PlanDetails.Slug)
	assert.Equal(t, []metal.PlanComponent{{Count: 1, Type: "Intel Xeon E-2278G 8-Core Processor @ 3.40GHz"}}, d.PlanDetails.CPUs)
	assert.Equal(t, "32GB", d.PlanDetails.Memory)
	assert.Equal(t, []metal.PlanDrive{{Count: 2, Type: "SSD", Size: "480GB", Category: "boot"}}, d.PlanDetails.Drives)
	assert.Equal(t, []metal.PlanComponent{{Count: 2, Type: "10Gbps"}}, d.PlanDetails.NICs)
	assert.True(t, d.TerminationTime.IsZero())
	assert.Equal(t, metal.BillingHourly, d.BillingCycle)
	assert.Equal(t, metal.OperatingSystemCustomIPXE, d.OperatingSystem)
	assert.Equal(t, ipxeURL, d.IPXEScriptURL)
	assert.Equal(t, []string{"cluster:test"}, d.Tags)
	assert.NotEmpty(t, d.ShortID)
	assert.False(t, d.CreatedAt.IsZero())
	assert.Equal(t, metal.NetworkTypeLayer3, d.NetworkType())
	assert.NotEmpty(t, d.PublicIPv4())
	assert.NotEmpty(t, d.PrivateIPv4())
	assert.Len(t, d.MACs(), 2)
	for _, name := range []string{"bond0", "eth0", "eth1"} {
		p, ok := d.Port(name)
		require.True(t, ok, name)
		assert.NotEmpty(t, p.ID)
	}
	assert.NotContains(t, fmt.Sprintf("%+v", *d), "join-token-secret")
	gets := e.sim.RequestsFor(metalsim.OpFindDeviceByID)
	require.NotEmpty(t, gets)
	assert.Contains(t, gets[0].Query, "exclude=userdata", "the join token is not even fetched")

	updated, err := e.client.UpdateDevice(e.ctx, d.ID, metal.DeviceUpdate{
		Description: new("managed by harvester-equinix-addon"),
		Tags:        &[]string{"cluster:test", "pool:a"},
		Locked:      new(true),
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"cluster:test", "pool:a"}, updated.Tags)
	assert.True(t, updated.Locked)

	err = e.client.DeleteDevice(e.ctx, d.ID, false)
	require.Error(t, err)
	assert.Equal(t, metal.ClassInvalid, metal.ClassOf(err), "a locked device is the user's to unlock: %v", err)

	_, err = e.client.UpdateDevice(e.ctx, d.ID, metal.DeviceUpdate{Locked: new(false)})
	require.NoError(t, err)

	require.NoError(t, e.client.PowerOff(e.ctx, d.ID))
	require.NoError(t, e.client.PowerOn(e.ctx, d.ID))
	require.NoError(t, e.client.Reboot(e.ctx, d.ID))
	require.NoError(t, e.client.Reinstall(e.ctx, d.ID, metal.ReinstallRequest{
		OperatingSystem: metal.OperatingSystemCustomIPXE, IPXEScriptURL: ipxeURL, PreserveData: true, DeprovisionFast: true,
	}))

	events, err := e.client.ListDeviceEvents(e.ctx, d.ID)
	require.NoError(t, err)
	assert.NotEmpty(t, events)

	require.Eventually(t, func() bool {
		return e.client.DeleteDevice(e.ctx, d.ID, false) == nil
	}, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		_, err := e.client.GetDevice(e.ctx, d.ID)
		return metal.IsNotFound(err)
	}, 5*time.Second, 10*time.Millisecond)

	err = e.client.DeleteDevice(e.ctx, d.ID, false)
	assert.True(t, metal.IsNotFound(err), "deleting a gone device: %v", err)
}

func TestSimListDevicesReadsEveryPage(t *testing.T) {
	e := newSimEnv(t, metalsim.Timings{})
	const ours = 105
	for i := range ours {
		_, err := e.client.CreateDevice(e.ctx, deviceRequest(fmt.Sprintf("pool-a-%03d", i), "pool:a"))
		require.NoError(t, err)
	}
	for i := range 3 {
		_, err := e.client.CreateDevice(e.ctx, deviceRequest(fmt.Sprintf("pool-b-%d", i), "pool:b"))
		require.NoError(t, err)
	}
	e.sim.ResetRequests()

	devices, err := e.client.ListDevices(e.ctx, metal.ListDevicesOptions{Tag: "pool:a"})
	require.NoError(t, err)
	assert.Len(t, devices, ours)
	seen := map[string]bool{}
	for _, d := range devices {
		assert.True(t, d.HasTag("pool:a"))
		seen[d.ID] = true
	}
	assert.Len(t, seen, ours, "no device twice")

	reqs := e.sim.RequestsFor(metalsim.OpFindProjectDevices)
	require.Len(t, reqs, 2)
	assert.Contains(t, reqs[0].Query, "per_page=100")
	assert.Contains(t, reqs[1].Query, "page=2")
	for _, r := range reqs {
		assert.Contains(t, r.Query, "exclude=userdata", "lists do not fetch the join token either")
	}

	all, err := e.client.ListDevices(e.ctx, metal.ListDevicesOptions{})
	require.NoError(t, err)
	assert.Len(t, all, ours+3)

	byName, err := e.client.ListDevices(e.ctx, metal.ListDevicesOptions{Hostname: "pool-b-1", Metro: "da"})
	require.NoError(t, err)
	require.Len(t, byName, 1)
	assert.Equal(t, "pool-b-1", byName[0].Hostname)
}

// A brief list (the orphan sweep's) asks for no expansions and no ports or
// addresses, yet still tells the devices apart.
func TestSimBriefListCarriesIdentityOnly(t *testing.T) {
	e := newSimEnv(t, metalsim.Timings{})
	full := e.activeDevice(t, "node-1")
	e.sim.ResetRequests()

	devices, err := e.client.ListDevices(e.ctx, metal.ListDevicesOptions{Tag: "cluster:test", Brief: true})
	require.NoError(t, err)
	require.Len(t, devices, 1)
	d := devices[0]
	assert.Equal(t, full.ID, d.ID)
	assert.Equal(t, "node-1", d.Hostname)
	assert.Equal(t, full.State, d.State)
	assert.Equal(t, full.Tags, d.Tags)
	assert.Equal(t, full.CreatedAt.Unix(), d.CreatedAt.Unix())
	assert.Empty(t, d.Ports)
	assert.Empty(t, d.PublicIPv4())
	assert.Empty(t, d.Plan, "the plan stays a reference")
	assert.Nil(t, d.PlanDetails)
	assert.Empty(t, d.Metro)
	assert.Empty(t, d.Facility)
	assert.Empty(t, d.OperatingSystem)

	reqs := e.sim.RequestsFor(metalsim.OpFindProjectDevices)
	require.Len(t, reqs, 1)
	assert.NotContains(t, reqs[0].Query, "include=")
	for _, field := range []string{"userdata", "network_ports", "ip_addresses", "plan", "metro", "facility", "operating_system"} {
		assert.Contains(t, reqs[0].Query, field)
	}
}

// A Retry-After longer than the client waits in a call (MaxLimiterWait).
func TestSimThrottleHonoursRetryAfter(t *testing.T) {
	e := newSimEnv(t, metalsim.Timings{}, func(o *metal.Options) { o.MaxLimiterWait = time.Second })
	d := e.activeDevice(t, "node-1")
	e.sim.ResetRequests()
	e.sim.InjectFault(metalsim.Fault{
		Kind: metalsim.FaultRateLimit, Operations: []string{metalsim.OpFindDeviceByID},
		Count: 1, RetryAfter: 5 * time.Second,
	})

	_, err := e.client.GetDevice(e.ctx, d.ID)
	require.Error(t, err)
	assert.True(t, metal.IsThrottled(err))
	assert.Equal(t, 5*time.Second, metal.RetryAfter(err))

	// While throttled every call fails fast, without reaching the API.
	_, err = e.client.ListDevices(e.ctx, metal.ListDevicesOptions{Tag: "cluster:test"})
	require.Error(t, err)
	assert.True(t, metal.IsThrottled(err))
	assert.Equal(t, 5*time.Second, metal.RetryAfter(err))
	assert.Len(t, e.sim.Requests(), 1)

	e.clock.Advance(5 * time.Second)
	got, err := e.client.GetDevice(e.ctx, d.ID)
	require.NoError(t, err)
	assert.Equal(t, d.ID, got.ID)
	assert.Equal(t, []int{429, 200}, statuses(e.sim.RequestsFor(metalsim.OpFindDeviceByID)))

	assert.Equal(t, 1.0, e.count(t, metal.OpGetDevice, "429"))
	assert.Equal(t, 1.0, e.count(t, metal.OpListDevices, "throttled"))
	assert.GreaterOrEqual(t, e.count(t, metal.OpGetDevice, "200"), 2.0)
	assert.Equal(t, 0.0, e.count(t, metal.OpListDevices, "200"))
}

// A short Retry-After is waited out and the refused call made again, except
// a create: its Instance looks for the device by tag before creating again.
func TestSimShortRetryAfterIsWaitedOut(t *testing.T) {
	// The client's clock must run for a real wait.
	e := newSimEnv(t, metalsim.Timings{}, func(o *metal.Options) { o.Now = nil; o.MaxLimiterWait = 5 * time.Second })
	d := e.activeDevice(t, "node-1")
	e.sim.ResetRequests()
	for _, op := range []string{metalsim.OpFindDeviceByID, metalsim.OpCreateDevice} {
		e.sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultRateLimit, Operations: []string{op}, Count: 1, RetryAfter: time.Second})
	}
	got, err := e.client.GetDevice(e.ctx, d.ID)
	require.NoError(t, err)
	assert.Equal(t, d.ID, got.ID)
	assert.Equal(t, []int{429, 200}, statuses(e.sim.RequestsFor(metalsim.OpFindDeviceByID)))

	_, err = e.client.CreateDevice(e.ctx, deviceRequest("node-2"))
	require.Error(t, err)
	assert.True(t, metal.IsThrottled(err))
	assert.Equal(t, []int{429}, statuses(e.sim.RequestsFor(metalsim.OpCreateDevice)), "a create was sent again")
}

func TestSimCreateIsNotResentAfterAFailure(t *testing.T) {
	tests := []struct {
		name  string
		fault metalsim.Fault
		code  string
	}{
		{name: "500 after the create was stored", code: "500",
			fault: metalsim.Fault{Kind: metalsim.FaultServerError, Operations: []string{metalsim.OpCreateDevice}, AfterStore: true, Count: 1}},
		{name: "503 from an intermediary after the create was stored", code: "503",
			fault: metalsim.Fault{Kind: metalsim.FaultServerError, Status: 503, Operations: []string{metalsim.OpCreateDevice}, AfterStore: true, Count: 1}},
		{name: "connection dropped after the create was stored", code: "error",
			fault: metalsim.Fault{Kind: metalsim.FaultDropConnection, Operations: []string{metalsim.OpCreateDevice}, AfterStore: true, Count: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newSimEnv(t, metalsim.Timings{})
			e.sim.InjectFault(tt.fault)

			_, err := e.client.CreateDevice(e.ctx, deviceRequest("node-1", "instance:uid-1"))
			require.Error(t, err)
			assert.True(t, metal.IsTransient(err), err.Error())
			assert.Len(t, e.sim.RequestsFor(metalsim.OpCreateDevice), 1, "the create is sent once")
			assert.Equal(t, 1.0, e.count(t, metal.OpCreateDevice, tt.code))

			// The next pass adopts the stored device by tag.
			found, err := e.client.ListDevices(e.ctx, metal.ListDevicesOptions{Tag: "instance:uid-1"})
			require.NoError(t, err)
			require.Len(t, found, 1)
			assert.Equal(t, "node-1", found[0].Hostname)
			assert.Len(t, e.sim.RequestsFor(metalsim.OpCreateDevice), 1)
		})
	}
}

func TestSimErrorClasses(t *testing.T) {
	e := newSimEnv(t, metalsim.Timings{})
	d := e.activeDevice(t, "node-1")

	t.Run("403 on GET is Forbidden, confirmed by a tag list", func(t *testing.T) {
		id := e.sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultForbidden, Operations: []string{metalsim.OpFindDeviceByID}, Count: 1})
		_, err := e.client.GetDevice(e.ctx, d.ID)
		require.Error(t, err)
		assert.Equal(t, metal.ClassForbidden, metal.ClassOf(err))
		assert.True(t, metal.IsAuth(err))
		assert.False(t, metal.IsNotFound(err))
		assert.Equal(t, 1, e.sim.FaultFired(id))

		found, err := e.client.ListDevices(e.ctx, metal.ListDevicesOptions{Tag: "cluster:test"})
		require.NoError(t, err)
		assert.Len(t, found, 1, "the device is still there")
	})

	t.Run("404 is NotFound", func(t *testing.T) {
		_, err := e.client.GetDevice(e.ctx, "00000000-0000-4000-8000-000000000000")
		require.Error(t, err)
		assert.True(t, metal.IsNotFound(err))
	})

	t.Run("401 is Unauthorized", func(t *testing.T) {
		p, err := metal.NewProvider(metal.Options{BaseURL: e.url})
		require.NoError(t, err)
		c, err := p.Client(metal.Credentials{Token: "wrong-token", ProjectID: simProject})
		require.NoError(t, err)
		_, err = c.GetDevice(e.ctx, d.ID)
		require.Error(t, err)
		assert.Equal(t, metal.ClassUnauthorized, metal.ClassOf(err))
		assert.NotContains(t, err.Error(), "wrong-token")
	})

	t.Run("an unknown project is a credentials problem", func(t *testing.T) {
		p, err := metal.NewProvider(metal.Options{BaseURL: e.url})
		require.NoError(t, err)
		c, err := p.Client(metal.Credentials{Token: simToken, ProjectID: "00000000-0000-4000-8000-000000000001"})
		require.NoError(t, err)
		_, err = c.ListDevices(e.ctx, metal.ListDevicesOptions{Tag: "x"})
		require.Error(t, err)
		assert.True(t, metal.IsAuth(err), err.Error())
		assert.False(t, metal.IsNotFound(err))
	})

	t.Run("500 is Transient", func(t *testing.T) {
		e.sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultServerError, Status: 502, Operations: []string{metalsim.OpFindDeviceByID}, Count: 1})
		_, err := e.client.GetDevice(e.ctx, d.ID)
		require.Error(t, err)
		assert.True(t, metal.IsTransient(err))
	})

	t.Run("no capacity", func(t *testing.T) {
		e.sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultNoCapacity, Count: 1})
		_, err := e.client.CreateDevice(e.ctx, deviceRequest("node-2"))
		require.Error(t, err)
		assert.Equal(t, metal.ClassNoCapacity, metal.ClassOf(err), err.Error())
	})

	t.Run("invalid create", func(t *testing.T) {
		req := deviceRequest("node-3")
		req.Plan = "no.such.plan"
		_, err := e.client.CreateDevice(e.ctx, req)
		require.Error(t, err)
		assert.Equal(t, metal.ClassInvalid, metal.ClassOf(err))
		assert.Contains(t, err.Error(), "no.such.plan")
	})
}

func TestSimDeleteWhileProvisioningIsBusy(t *testing.T) {
	e := newSimEnv(t, metalsim.DefaultTimings())
	d, err := e.client.CreateDevice(e.ctx, deviceRequest("node-1"))
	require.NoError(t, err)

	e.clock.Advance(time.Minute)
	got, err := e.client.GetDevice(e.ctx, d.ID)
	require.NoError(t, err)
	require.Equal(t, metal.DeviceStateProvisioning, got.State)
	assert.Greater(t, got.ProvisioningPercentage, 0.0)

	err = e.client.DeleteDevice(e.ctx, d.ID, false)
	require.Error(t, err)
	assert.Equal(t, metal.ClassBusy, metal.ClassOf(err), err.Error())
	assert.Equal(t, 422, statusOf(t, err))

	e.clock.Advance(10 * time.Minute)
	require.NoError(t, e.client.DeleteDevice(e.ctx, d.ID, false))
}

func statusOf(t *testing.T, err error) int {
	t.Helper()
	var me *metal.Error
	require.ErrorAs(t, err, &me)
	return me.StatusCode
}

func TestSimDeviceEventsReadEveryPage(t *testing.T) {
	e := newSimEnv(t, metalsim.Timings{})
	d := e.activeDevice(t, "node-1")
	before, err := e.client.ListDeviceEvents(e.ctx, d.ID)
	require.NoError(t, err)
	for i := range 120 {
		require.NoError(t, e.sim.AddDeviceEvent(d.ID, "test.event", fmt.Sprintf("event %d", i)))
	}
	e.sim.ResetRequests()
	events, err := e.client.ListDeviceEvents(e.ctx, d.ID)
	require.NoError(t, err)
	assert.Len(t, events, len(before)+120)
	assert.Len(t, e.sim.RequestsFor(metalsim.OpFindDeviceEvents), (len(before)+120+99)/100)
}
