package bmcsim

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const user, pass = "root", "calvin-sim"

type fixture struct {
	bmc *BMC
	srv *Server
	hc  *http.Client
	now time.Time
}

func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	f := &fixture{now: time.Unix(1_800_000_000, 0)}
	opts.Username, opts.Password = user, pass
	if opts.Now == nil {
		opts.Now = func() time.Time { return f.now }
	}
	f.bmc = New(opts)
	srv, err := NewServer(f.bmc, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	f.srv = srv
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(srv.CACertPEM))
	f.hc = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	return f
}

// do sends a request with basic auth (auth true) and decodes the JSON body.
func (f *fixture) do(t *testing.T, method, path string, body any, auth bool) (*http.Response, map[string]any) {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, f.srv.URL+path, rd)
	require.NoError(t, err)
	if auth {
		req.SetBasicAuth(user, pass)
	}
	resp, err := f.hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp, out
}

// Every resource reachable from the service root answers 200 with the
// OData annotations of the DMTF schema and its own @odata.id.
func TestEveryResourceCarriesODataAnnotations(t *testing.T) {
	f := newFixture(t, Options{})
	f.bmc.AddLogEntry("OK", "System boot")
	seen := map[string]bool{}
	queue := []string{"/redfish/v1/"}
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		if seen[path] {
			continue
		}
		seen[path] = true
		resp, body := f.do(t, http.MethodGet, path, nil, true)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Equal(t, strings.TrimSuffix(path, "/"), strings.TrimSuffix(body["@odata.id"].(string), "/"), path)
		assert.Regexp(t, `^#\w+(\.v\d+_\d+_\d+)?\.\w+$`, body["@odata.type"], path)
		assert.Contains(t, body["@odata.context"], "/redfish/v1/$metadata#", path)
		queue = append(queue, links(body)...)
	}
	assert.GreaterOrEqual(t, len(seen), 30, "the crawl should reach systems, chassis, managers and their members")
}

// links collects every @odata.id below the top level, without fragments
// (Thermal#/Fans/0 is part of its parent, not a resource).
func links(v any) []string {
	var out []string
	var walk func(v any, top bool)
	walk = func(v any, top bool) {
		switch x := v.(type) {
		case map[string]any:
			for k, val := range x {
				if s, ok := val.(string); ok && k == "@odata.id" && !top && !strings.Contains(s, "#") {
					out = append(out, s)
				}
				walk(val, false)
			}
		case []any:
			for _, e := range x {
				walk(e, false)
			}
		}
	}
	walk(v, true)
	return out
}

func TestAuthentication(t *testing.T) {
	f := newFixture(t, Options{})
	resp, _ := f.do(t, http.MethodGet, "/redfish/v1/", nil, false)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the service root is open to all")

	resp, body := f.do(t, http.MethodGet, "/redfish/v1/Systems/1", nil, false)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.NotEmpty(t, resp.Header.Get("WWW-Authenticate"))
	info := body["error"].(map[string]any)["@Message.ExtendedInfo"].([]any)[0].(map[string]any)
	assert.Equal(t, "Base.1.8.NoValidSession", info["MessageId"])

	resp, _ = f.do(t, http.MethodPost, "/redfish/v1/SessionService/Sessions", map[string]string{"UserName": user, "Password": "nope"}, false)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	resp, body = f.do(t, http.MethodPost, "/redfish/v1/SessionService/Sessions", map[string]string{"UserName": user, "Password": pass}, false)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	token, loc := resp.Header.Get("X-Auth-Token"), resp.Header.Get("Location")
	assert.NotEmpty(t, token)
	assert.Equal(t, loc, body["@odata.id"])
	assert.Equal(t, 1, f.bmc.Sessions())

	get := func() int {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/redfish/v1/Systems/1", nil)
		req.Header.Set("X-Auth-Token", token)
		resp, err := f.hc.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, get())
	resp, _ = f.do(t, http.MethodDelete, loc, nil, true)
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.Equal(t, http.StatusUnauthorized, get(), "the token dies with its session")
	assert.Equal(t, 0, f.bmc.Sessions())
}

func reset(t *testing.T, f *fixture, typ string) int {
	resp, _ := f.do(t, http.MethodPost, "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset", map[string]string{"ResetType": typ}, true)
	return resp.StatusCode
}

func TestResetTransitions(t *testing.T) {
	f := newFixture(t, Options{PowerTransition: 30 * time.Second})
	_, sys := f.do(t, http.MethodGet, "/redfish/v1/Systems/1", nil, true)
	action := sys["Actions"].(map[string]any)["#ComputerSystem.Reset"].(map[string]any)
	assert.ElementsMatch(t, []any{"On", "ForceOff", "GracefulShutdown", "ForceRestart", "PowerCycle"}, action["ResetType@Redfish.AllowableValues"])

	assert.Equal(t, http.StatusBadRequest, reset(t, f, "Hibernate"))
	assert.Equal(t, http.StatusNoContent, reset(t, f, "GracefulShutdown"))
	assert.Equal(t, "PoweringOff", f.bmc.PowerState())
	f.now = f.now.Add(30 * time.Second)
	assert.Equal(t, "Off", f.bmc.PowerState())
	assert.Equal(t, http.StatusConflict, reset(t, f, "ForceRestart"), "ForceRestart needs a running host")
	assert.Equal(t, http.StatusNoContent, reset(t, f, "On"))
	assert.Equal(t, "PoweringOn", f.bmc.PowerState())
	f.now = f.now.Add(30 * time.Second)
	assert.Equal(t, "On", f.bmc.PowerState())
	assert.Equal(t, http.StatusNoContent, reset(t, f, "ForceOff"))
	assert.Equal(t, "Off", f.bmc.PowerState(), "forced actions act at once")
	assert.Equal(t, []string{"GracefulShutdown", "On", "ForceOff"}, f.bmc.Resets(), "refused resets are not counted")
}

func TestLogWrapsPagesAndClears(t *testing.T) {
	f := newFixture(t, Options{MaxLogEntries: 5, LogPageSize: 2})
	for i := range 7 {
		f.bmc.AddLogEntry("Warning", "event "+string(rune('a'+i)))
	}
	var ids []any
	path := "/redfish/v1/Managers/1/LogServices/SEL/Entries"
	for path != "" {
		_, page := f.do(t, http.MethodGet, path, nil, true)
		assert.EqualValues(t, 5, page["Members@odata.count"])
		for _, m := range page["Members"].([]any) {
			ids = append(ids, m.(map[string]any)["Id"])
		}
		path, _ = page["Members@odata.nextLink"].(string)
	}
	assert.Equal(t, []any{"3", "4", "5", "6", "7"}, ids, "the two oldest were overwritten")

	resp, _ := f.do(t, http.MethodPost, "/redfish/v1/Managers/1/LogServices/SEL/Actions/LogService.ClearLog", map[string]any{}, true)
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.Equal(t, "1", f.bmc.AddLogEntry("OK", "after clear"), "Ids start again after a clear")
}

// A drive predicts its failure on its own, whatever its health says.
func TestDriveFailurePredicted(t *testing.T) {
	f := newFixture(t, Options{})
	_, d := f.do(t, http.MethodGet, "/redfish/v1/Systems/1/Storage/1/Drives/1", nil, true)
	assert.Equal(t, false, d["FailurePredicted"])
	require.NoError(t, f.bmc.SetFailurePredicted("Disk 1", true))
	assert.Error(t, f.bmc.SetFailurePredicted("Fan 3", true))
	_, d = f.do(t, http.MethodGet, "/redfish/v1/Systems/1/Storage/1/Drives/1", nil, true)
	assert.Equal(t, true, d["FailurePredicted"])
	assert.Equal(t, "OK", d["Status"].(map[string]any)["Health"])
}

func TestHealthRollsUp(t *testing.T) {
	f := newFixture(t, Options{})
	require.NoError(t, f.bmc.SetHealth(PartFan, "Fan 3", HealthWarning))
	assert.Error(t, f.bmc.SetHealth(PartFan, "Fan 9", HealthWarning))
	assert.Error(t, f.bmc.SetHealth(PartFan, "Fan 3", "Broken"))
	_, th := f.do(t, http.MethodGet, "/redfish/v1/Chassis/1/Thermal", nil, true)
	assert.Equal(t, "Warning", th["Status"].(map[string]any)["Health"])
	_, sys := f.do(t, http.MethodGet, "/redfish/v1/Systems/1", nil, true)
	assert.Equal(t, "Warning", sys["Status"].(map[string]any)["HealthRollup"])
}

func TestFaults(t *testing.T) {
	f := newFixture(t, Options{})
	id := f.bmc.InjectFault(Fault{Kind: FaultServerError, PathPrefix: "/redfish/v1/Chassis", Count: 2})
	for _, want := range []int{500, 500, 200} {
		resp, _ := f.do(t, http.MethodGet, "/redfish/v1/Chassis/1", nil, true)
		assert.Equal(t, want, resp.StatusCode)
	}
	assert.Equal(t, 2, f.bmc.FaultFired(id))
	resp, _ := f.do(t, http.MethodGet, "/redfish/v1/Systems/1", nil, true)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "other paths are untouched")

	f.bmc.InjectFault(Fault{Kind: FaultUnauthorized, Method: http.MethodPost})
	assert.Equal(t, http.StatusUnauthorized, reset(t, f, "On"))
	f.bmc.ClearFaults()
	assert.Equal(t, http.StatusNoContent, reset(t, f, "On"))

	require.NoError(t, f.srv.GoAway())
	_, err := f.hc.Get(f.srv.URL + "/redfish/v1/")
	assert.ErrorContains(t, err, "connection refused")
	require.NoError(t, f.srv.ComeBack())
	resp, _ = f.do(t, http.MethodGet, "/redfish/v1/", nil, false)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}
