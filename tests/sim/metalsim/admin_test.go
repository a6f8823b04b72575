package metalsim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// admin calls the admin API over HTTP and decodes a JSON answer into out.
func (e *env) admin(method, path, body string, want int, out any) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+AdminPrefix+path, strings.NewReader(body))
	require.NoError(e.t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	require.Equal(e.t, want, resp.StatusCode, "%s %s: %s", method, path, b)
	if out != nil {
		assert.Equal(e.t, "application/json", resp.Header.Get("Content-Type"))
		require.NoError(e.t, json.Unmarshal(b, out))
	}
}

func TestAdminFaults(t *testing.T) {
	e := newEnv(t)
	d := e.createActive("node-1")

	var added FaultState
	e.admin(http.MethodPost, "/faults", `{"kind":"rate_limit","operations":["findDeviceById"],"count":1,"retry_after":"3s"}`, http.StatusCreated, &added)
	assert.Equal(t, Fault{Kind: FaultRateLimit, Operations: []string{OpFindDeviceByID}, Count: 1, RetryAfter: 3 * time.Second}, added.Fault)
	var other FaultState
	e.admin(http.MethodPost, "/faults", `{"kind":"server_error","actions":["power_off"],"after_store":true,"status":503}`, http.StatusCreated, &other)

	_, resp, err := e.client.DevicesApi.FindDeviceById(e.ctx, d.GetId()).Execute()
	requireAPIError(t, resp, err, http.StatusTooManyRequests, "")
	assert.Equal(t, "3", resp.Header.Get("Retry-After"))
	_, err = e.action(d.GetId(), metalv1.DeviceActionInput{Type: metalv1.DEVICEACTIONINPUTTYPE_POWER_OFF})
	require.Error(t, err)

	var list struct {
		Faults []FaultState `json:"faults"`
	}
	e.admin(http.MethodGet, "/faults", "", http.StatusOK, &list)
	require.Len(t, list.Faults, 2)
	assert.Equal(t, FaultState{ID: added.ID, Fired: 1, Fault: added.Fault}, list.Faults[0])
	assert.Equal(t, 1, list.Faults[1].Fired)
	assert.Equal(t, 503, list.Faults[1].Fault.Status)

	e.admin(http.MethodDelete, "/faults/"+strconv.Itoa(int(added.ID)), "", http.StatusNoContent, nil)
	e.admin(http.MethodDelete, "/faults/"+strconv.Itoa(int(added.ID)), "", http.StatusNotFound, nil)
	e.admin(http.MethodGet, "/faults", "", http.StatusOK, &list)
	assert.Len(t, list.Faults, 1)
	e.admin(http.MethodDelete, "/faults", "", http.StatusNoContent, nil)
	assert.Empty(t, e.sim.Faults())

	for name, body := range map[string]string{
		"unknown kind":     `{"kind":"meteor"}`,
		"unknown field":    `{"kind":"latency","latncy":"1s"}`,
		"bad duration":     `{"kind":"latency","latency":"soon"}`,
		"status on a 429":  `{"kind":"rate_limit","status":500}`,
		"odd probability":  `{"kind":"forbidden","probability":2}`,
		"not JSON at all":  `kind=latency`,
		"negative count":   `{"kind":"forbidden","count":-1}`,
		"4xx server error": `{"kind":"server_error","status":404}`,
	} {
		t.Run(name, func(t *testing.T) {
			var answer map[string]string
			e.admin(http.MethodPost, "/faults", body, http.StatusBadRequest, &answer)
			assert.NotEmpty(t, answer["error"])
		})
	}
	assert.Empty(t, e.sim.Faults())
}

func TestAdminPlatformActions(t *testing.T) {
	e := newEnv(t)
	a := e.createActive("node-a")
	b := e.createActive("node-b")

	at := e.clock.Now().Add(time.Minute).Format(time.RFC3339)
	e.admin(http.MethodPut, "/devices/"+a.GetId()+"/termination-time", `{"termination_time":"`+at+`"}`, http.StatusNoContent, nil)
	assert.Equal(t, at, e.get(a.GetId()).GetTerminationTime().Format(time.RFC3339))
	e.admin(http.MethodPut, "/devices/"+a.GetId()+"/termination-time", `{"termination_time":null}`, http.StatusNoContent, nil)
	assert.False(t, e.get(a.GetId()).HasTerminationTime())
	e.admin(http.MethodPut, "/devices/"+a.GetId()+"/termination-time", `{"termination_time":"`+at+`"}`, http.StatusNoContent, nil)
	e.clock.Advance(time.Minute)
	assert.Equal(t, metalv1.DEVICESTATE_DEPROVISIONING, e.get(a.GetId()).GetState())

	e.admin(http.MethodPost, "/devices/"+b.GetId()+"/maintenance", `{"start":"2026-03-05T00:00:00Z","message":"PDU swap"}`, http.StatusNoContent, nil)
	assert.Equal(t, EventMaintenance, e.events(b.GetId())[0])
	e.admin(http.MethodDelete, "/devices/"+b.GetId(), "", http.StatusNoContent, nil)
	_, ok := e.sim.Device(b.GetId())
	assert.False(t, ok)
	e.admin(http.MethodDelete, "/devices/"+b.GetId(), "", http.StatusNotFound, nil)
	e.admin(http.MethodPost, "/devices/"+b.GetId()+"/maintenance", `{}`, http.StatusNotFound, nil)

	var res struct {
		IDs []string `json:"ids"`
	}
	e.admin(http.MethodPost, "/projects/"+testProject+"/hardware-reservations", `{"plan":"m3.small.x86","facility":"fr8","count":2}`, http.StatusCreated, &res)
	require.Len(t, res.IDs, 2)
	r, _, err := e.client.HardwareReservationsApi.FindHardwareReservationById(e.ctx, res.IDs[1]).Execute()
	require.NoError(t, err)
	assert.Equal(t, "fr8", r.Facility.GetCode())
	e.admin(http.MethodPost, "/projects/"+testProject+"/hardware-reservations", `{"plan":"z9.huge","metro":"da"}`, http.StatusNotFound, nil)

	e.admin(http.MethodPut, "/spot-market", `{"metro":"da","plan":"c3.small.x86","price":0.9,"capacity":0}`, http.StatusNoContent, nil)
	_, resp, err := e.createIn(spotInput("spot-1"))
	requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "capacity")
	e.admin(http.MethodPut, "/spot-market", `{"metro":"da","plan":"c3.small.x86","price":-1}`, http.StatusBadRequest, nil)
	e.admin(http.MethodGet, "/no-such-thing", "", http.StatusNotFound, nil)
}

// Only loopback clients reach the admin API, so a simulator listening on a
// public address cannot be steered from elsewhere.
func TestAdminAnswersLoopbackOnly(t *testing.T) {
	e := newEnv(t)
	for _, remote := range []string{"10.1.2.3:5555", "[2001:db8::1]:443", "not-an-address"} {
		req := httptest.NewRequest(http.MethodPost, AdminPrefix+"/faults", bytes.NewBufferString(`{"kind":"forbidden"}`))
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		e.sim.Handler().ServeHTTP(rec, req)
		assert.Equal(t, http.StatusForbidden, rec.Code, remote)
		assert.Contains(t, rec.Body.String(), "loopback clients only")
	}
	assert.Empty(t, e.sim.Faults())
	for _, remote := range []string{"127.0.0.1:5555", "[::1]:443"} {
		req := httptest.NewRequest(http.MethodGet, AdminPrefix+"/faults", nil)
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		e.sim.Handler().ServeHTTP(rec, req)
		assert.Equal(t, http.StatusOK, rec.Code, remote)
	}
}
