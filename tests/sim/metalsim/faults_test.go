package metalsim

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (e *env) createRaw(in metalv1.DeviceCreateInMetroInput) (*metalv1.Device, *http.Response, error) {
	return e.client.DevicesApi.CreateDevice(e.ctx, testProject).
		CreateDeviceRequest(metalv1.CreateDeviceRequest{DeviceCreateInMetroInput: &in}).Execute()
}

func TestFaultRateLimit(t *testing.T) {
	e := newEnv(t)
	id := e.sim.InjectFault(Fault{Kind: FaultRateLimit, Operations: []string{OpFindProjectDevices}, Count: 1, RetryAfter: 1500 * time.Millisecond})

	_, resp, err := e.client.DevicesApi.FindProjectDevices(e.ctx, testProject).Execute()
	apiErr := apiErrorOf(t, resp, err, http.StatusTooManyRequests, "")
	assert.Equal(t, "429 Too Many Requests", err.Error(), "the SDK decodes no model for 429")
	assert.Nil(t, apiErr.Model())
	assert.Equal(t, "2", resp.Header.Get("Retry-After"))
	assert.Equal(t, "1000", resp.Header.Get("X-RateLimit-Limit"))
	assert.Equal(t, "0", resp.Header.Get("X-RateLimit-Remaining"))
	assert.Equal(t, strconv.FormatInt(testStart.Add(1500*time.Millisecond).Unix(), 10), resp.Header.Get("X-RateLimit-Reset"))
	assert.Equal(t, 1, e.sim.FaultFired(id))

	_, _, err = e.client.DevicesApi.FindProjectDevices(e.ctx, testProject).Execute()
	require.NoError(t, err, "Count limits the fault")
	logged := e.sim.RequestsFor(OpFindProjectDevices)
	require.Len(t, logged, 2)
	assert.Equal(t, FaultRateLimit, logged[0].Fault)
	assert.Equal(t, http.StatusTooManyRequests, logged[0].Status)
	assert.Empty(t, logged[1].Fault)
}

func TestRateLimitOption(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.RateLimit = 2 })
	for i := 0; i < 2; i++ {
		_, resp, err := e.client.DevicesApi.FindProjectDevices(e.ctx, testProject).Execute()
		require.NoError(t, err)
		assert.Equal(t, strconv.Itoa(1-i), resp.Header.Get("X-RateLimit-Remaining"))
	}
	_, resp, err := e.client.DevicesApi.FindProjectDevices(e.ctx, testProject).Execute()
	requireAPIError(t, resp, err, http.StatusTooManyRequests, "")
	assert.Equal(t, "60", resp.Header.Get("Retry-After"))
	e.clock.Advance(time.Minute)
	_, _, err = e.client.DevicesApi.FindProjectDevices(e.ctx, testProject).Execute()
	require.NoError(t, err)
}

func TestFaultServerErrors(t *testing.T) {
	tests := []struct {
		status      int
		contentType string
		body        string
	}{
		{http.StatusInternalServerError, "application/json", `{"errors":["Something went wrong. Please try again later."]}`},
		{http.StatusBadGateway, "text/html", "<center><h1>502 Bad Gateway</h1></center>"},
		{http.StatusServiceUnavailable, "text/plain", "upstream connect error"},
		{http.StatusGatewayTimeout, "text/html", "504 Gateway Timeout"},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			e := newEnv(t)
			d := e.create(ipxeInput("node-1"))
			e.sim.InjectFault(Fault{Kind: FaultServerError, Status: tt.status})
			_, resp, err := e.client.DevicesApi.FindDeviceById(e.ctx, d.GetId()).Execute()
			apiErr := apiErrorOf(t, resp, err, tt.status, "")
			assert.Equal(t, tt.contentType, resp.Header.Get("Content-Type"))
			assert.Contains(t, string(apiErr.Body()), tt.body)
			assert.Nil(t, apiErr.Model())
		})
	}
}

func TestFaultForbiddenOnGet(t *testing.T) {
	e := newEnv(t)
	d := e.create(ipxeInput("node-1"))
	e.sim.InjectFault(Fault{Kind: FaultForbidden})

	_, resp, err := e.client.DevicesApi.FindDeviceById(e.ctx, d.GetId()).Execute()
	apiErr := apiErrorOf(t, resp, err, http.StatusForbidden, "You are not authorized to view this device")
	assert.NotNil(t, apiErr.Model())

	_, _, err = e.client.DevicesApi.UpdateDevice(e.ctx, d.GetId()).
		DeviceUpdateInput(metalv1.DeviceUpdateInput{Description: ptr("x")}).Execute()
	require.NoError(t, err, "without Operations only GETs are hit")
}

func TestFaultLatency(t *testing.T) {
	e := newEnv(t)
	e.sim.InjectFault(Fault{Kind: FaultLatency, Operations: []string{OpFindPlans}, Latency: 50 * time.Millisecond})
	start := time.Now()
	_, _, err := e.client.PlansApi.FindPlans(e.ctx).Execute()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
}

func TestFaultDropConnection(t *testing.T) {
	t.Run("before the request is applied", func(t *testing.T) {
		e := newEnv(t)
		e.sim.InjectFault(Fault{Kind: FaultDropConnection, Operations: []string{OpCreateDevice}, Count: 1})
		_, resp, err := e.createRaw(ipxeInput("node-1"))
		require.Error(t, err)
		assert.Nil(t, resp)
		assert.Empty(t, e.sim.Devices(testProject))
	})
	t.Run("after a create was stored", func(t *testing.T) {
		e := newEnv(t)
		e.sim.InjectFault(Fault{Kind: FaultDropConnection, Operations: []string{OpCreateDevice}, AfterStore: true, Count: 1})
		_, resp, err := e.createRaw(ipxeInput("node-1"))
		require.Error(t, err, "the client sees a transport error")
		assert.Nil(t, resp)

		list, err := e.client.DevicesApi.FindProjectDevices(e.ctx, testProject).Tag("pool:node-1").ExecuteWithPagination()
		require.NoError(t, err)
		require.Len(t, list.Devices, 1, "the device exists and can be adopted by tag")
		logged := e.sim.RequestsFor(OpCreateDevice)
		require.Len(t, logged, 1, "a POST is never retried by the transport")
		assert.True(t, logged[0].Dropped)
		assert.Equal(t, 0, logged[0].Status)
	})
	t.Run("5xx after a create was stored", func(t *testing.T) {
		e := newEnv(t)
		e.sim.InjectFault(Fault{Kind: FaultServerError, Status: http.StatusBadGateway, Operations: []string{OpCreateDevice}, AfterStore: true})
		_, resp, err := e.createRaw(ipxeInput("node-1"))
		requireAPIError(t, resp, err, http.StatusBadGateway, "")
		assert.Len(t, e.sim.Devices(testProject), 1)
	})
}

func TestFaultProvisionFailure(t *testing.T) {
	e := newEnv(t)
	tm := DefaultTimings()
	e.sim.InjectFault(Fault{Kind: FaultProvisionFailure, Plan: "m3.large.x86"})
	good := e.create(ipxeInput("node-1"))
	in := ipxeInput("node-2")
	in.Plan = "m3.large.x86"
	bad := e.create(in)
	e.clock.Advance(tm.Queue + tm.IPXEBoot)
	assert.Equal(t, metalv1.DEVICESTATE_ACTIVE, e.get(good.GetId()).GetState())
	assert.Equal(t, metalv1.DEVICESTATE_FAILED, e.get(bad.GetId()).GetState())
}

func TestFaultNoCapacity(t *testing.T) {
	e := newEnv(t)
	e.sim.InjectFault(Fault{Kind: FaultNoCapacity, Metro: "da", Plan: "c3.small.x86"})
	_, resp, err := e.createRaw(ipxeInput("node-1"))
	apiErr := apiErrorOf(t, resp, err, http.StatusUnprocessableEntity, "")
	assert.Equal(t, []string{"There aren't available servers in that metro"}, modelMessages(t, apiErr))
	assert.JSONEq(t, `{"errors":["There aren't available servers in that metro"]}`, string(apiErr.Body()))

	in := ipxeInput("node-1")
	in.Metro = "dc"
	e.create(in)
}

func TestFaultProbabilityIsReproducible(t *testing.T) {
	run := func() []int {
		e := newEnv(t)
		e.sim.InjectFault(Fault{Kind: FaultServerError, Operations: []string{OpFindPlans}, Probability: 0.5})
		var statuses []int
		for range 20 {
			_, resp, _ := e.client.PlansApi.FindPlans(e.ctx).Execute()
			statuses = append(statuses, resp.StatusCode)
		}
		return statuses
	}
	first := run()
	assert.Equal(t, first, run())
	assert.Contains(t, first, http.StatusOK)
	assert.Contains(t, first, http.StatusInternalServerError)
}

func TestRemoveAndClearFaults(t *testing.T) {
	e := newEnv(t)
	id := e.sim.InjectFault(Fault{Kind: FaultServerError})
	e.sim.RemoveFault(id)
	_, _, err := e.client.PlansApi.FindPlans(e.ctx).Execute()
	require.NoError(t, err)
	e.sim.InjectFault(Fault{Kind: FaultServerError})
	e.sim.ClearFaults()
	_, _, err = e.client.PlansApi.FindPlans(e.ctx).Execute()
	require.NoError(t, err)
}

func TestDeviceDeletedOutOfBand(t *testing.T) {
	e := newEnv(t)
	rec := record(e.sim)
	d := e.createActive("node-1")
	require.NoError(t, e.sim.DeleteDeviceOutOfBand(d.GetId()))

	_, resp, err := e.client.DevicesApi.FindDeviceById(e.ctx, d.GetId()).Execute()
	requireAPIError(t, resp, err, http.StatusNotFound, "")
	deleted := rec.of(DeviceDeleted)
	require.Len(t, deleted, 1)
	assert.True(t, deleted[0].OutOfBand)
	assert.Equal(t, metalv1.DEVICESTATE_ACTIVE, deleted[0].PreviousState)
	assert.ErrorIs(t, e.sim.DeleteDeviceOutOfBand(d.GetId()), ErrNotFound)
}
