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

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
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
	assert.Equal(t, failure.Invalid, failure.ClassOf(err), "a locked device is the user's to unlock: %v", err)

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

// The devices to be taken back are found with one brief list, each with
// its termination time.
func TestSimListDevicesWithTerminationTime(t *testing.T) {
	e := newSimEnv(t, metalsim.Timings{})
	e.activeDevice(t, "node-1")
	doomed := e.activeDevice(t, "node-2")
	at := e.clock.Now().Add(2 * time.Minute).UTC().Truncate(time.Second)
	require.NoError(t, e.sim.SetTerminationTime(doomed.ID, at))
	e.sim.ResetRequests()

	devices, err := e.client.ListDevices(e.ctx, metal.ListDevicesOptions{WithTerminationTime: true, Brief: true})
	require.NoError(t, err)
	require.Len(t, devices, 1)
	assert.Equal(t, doomed.ID, devices[0].ID)
	assert.True(t, at.Equal(devices[0].TerminationTime), "%s", devices[0].TerminationTime)
	reqs := e.sim.RequestsFor(metalsim.OpFindProjectDevices)
	require.Len(t, reqs, 1)
	assert.Contains(t, reqs[0].Query, "has_termination_time=true")
}
