package metalsim

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAuthentication(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name   string
		client *metalv1.APIClient
	}{
		{"missing token", newClient(e.srv.URL+apiPrefix, "")},
		{"wrong token", newClient(e.srv.URL+apiPrefix, "not-a-token")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, resp, err := tt.client.DevicesApi.FindProjectDevices(e.ctx, testProject).Execute()
			apiErr := apiErrorOf(t, resp, err, http.StatusUnauthorized, "Invalid authentication token")
			assert.JSONEq(t, `{"error":"Invalid authentication token"}`, string(apiErr.Body()))
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		})
	}
}

func TestObjectsOfAnotherProject(t *testing.T) {
	e := newEnv(t)
	d := e.createActive("node-1")

	t.Run("listing another project's devices is forbidden", func(t *testing.T) {
		_, resp, err := e.other.DevicesApi.FindProjectDevices(e.ctx, testProject).Execute()
		requireAPIError(t, resp, err, http.StatusForbidden, "not authorized")
	})
	t.Run("getting another project's device is forbidden", func(t *testing.T) {
		_, resp, err := e.other.DevicesApi.FindDeviceById(e.ctx, d.GetId()).Execute()
		apiErr := apiErrorOf(t, resp, err, http.StatusForbidden, "")
		assert.Equal(t, []string{"You are not authorized to view this device"}, modelMessages(t, apiErr))
	})
	t.Run("deleting another project's device is forbidden", func(t *testing.T) {
		resp, err := e.other.DevicesApi.DeleteDevice(e.ctx, d.GetId()).Execute()
		requireAPIError(t, resp, err, http.StatusForbidden, "not authorized")
	})
	t.Run("operations without a documented 403 answer 404", func(t *testing.T) {
		resp, err := e.other.DevicesApi.PerformAction(e.ctx, d.GetId()).
			DeviceActionInput(metalv1.DeviceActionInput{Type: metalv1.DEVICEACTIONINPUTTYPE_REBOOT}).Execute()
		requireAPIError(t, resp, err, http.StatusNotFound, "Not found")
		_, resp, err = e.other.PortsApi.FindPortById(e.ctx, d.NetworkPorts[0].GetId()).Execute()
		requireAPIError(t, resp, err, http.StatusNotFound, "Not found")
	})
	t.Run("unknown project", func(t *testing.T) {
		_, resp, err := e.client.DevicesApi.FindProjectDevices(e.ctx, "00000000-0000-4000-8000-000000000000").Execute()
		requireAPIError(t, resp, err, http.StatusNotFound, "Not found")
	})
	t.Run("a token with two projects sees both", func(t *testing.T) {
		e.sim.AddProject(otherToken, testProject)
		got, _, err := e.other.DevicesApi.FindDeviceById(e.ctx, d.GetId()).Execute()
		require.NoError(t, err)
		assert.Equal(t, d.GetId(), got.GetId())
	})
}

// The SDK cannot call routes that do not exist, so this one test speaks
// plain HTTP.
func TestUnknownRouteAnswersJSON404(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{apiPrefix + "/nope", apiPrefix + "/devices/x/nope", "/nope"} {
		req, err := http.NewRequestWithContext(e.ctx, http.MethodPatch, e.srv.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("X-Auth-Token", testToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		var m map[string]string
		require.NoError(t, json.Unmarshal(body, &m))
		assert.Equal(t, "Not found", m["error"])
	}
}

func TestRequestLogNeverHoldsTheToken(t *testing.T) {
	e := newEnv(t)
	d := e.create(ipxeInput("node-1"))
	_, _, err := e.client.DevicesApi.FindDeviceById(e.ctx, d.GetId()).Include([]string{"plan"}).Execute()
	require.NoError(t, err)

	reqs := e.sim.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, Request{
		Time: testStart, Method: http.MethodPost, Path: "/metal/v1/projects/" + testProject + "/devices",
		Operation: OpCreateDevice, Status: http.StatusCreated,
	}, reqs[0])
	assert.Equal(t, OpFindDeviceByID, reqs[1].Operation)
	assert.Equal(t, "include=plan", reqs[1].Query)
	for _, r := range reqs {
		raw, err := json.Marshal(r)
		require.NoError(t, err)
		assert.NotContains(t, string(raw), testToken)
	}
	assert.Len(t, e.sim.RequestsFor(OpCreateDevice), 1)
	e.sim.ResetRequests()
	assert.Empty(t, e.sim.Requests())
}
