package metal_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

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
	assert.Equal(t, 5*time.Second, failure.RetryAfter(err))

	// While throttled every call fails fast, without reaching the API.
	_, err = e.client.ListDevices(e.ctx, metal.ListDevicesOptions{Tag: "cluster:test"})
	require.Error(t, err)
	assert.True(t, metal.IsThrottled(err))
	assert.Equal(t, 5*time.Second, failure.RetryAfter(err))
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
		assert.Equal(t, failure.Forbidden, failure.ClassOf(err))
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
		assert.Equal(t, failure.Unauthorized, failure.ClassOf(err))
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
		assert.Equal(t, failure.NoCapacity, failure.ClassOf(err), err.Error())
	})

	t.Run("invalid create", func(t *testing.T) {
		req := deviceRequest("node-3")
		req.Plan = "no.such.plan"
		_, err := e.client.CreateDevice(e.ctx, req)
		require.Error(t, err)
		assert.Equal(t, failure.Invalid, failure.ClassOf(err))
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
	assert.Equal(t, failure.Busy, failure.ClassOf(err), err.Error())
	assert.Equal(t, 422, statusOf(t, err))

	e.clock.Advance(10 * time.Minute)
	require.NoError(t, e.client.DeleteDevice(e.ctx, d.ID, false))
}

func statusOf(t *testing.T, err error) int {
	t.Helper()
	var me *failure.Error
	require.ErrorAs(t, err, &me)
	return me.StatusCode
}
