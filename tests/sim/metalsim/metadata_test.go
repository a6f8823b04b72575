package metalsim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The metadata service is not part of the SDK, so these tests speak HTTP
// as an installing node would.
func (e *env) metadataCall(method, path, deviceID string, body []byte) (*http.Response, []byte) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.ctx, method, e.srv.URL+path, bytes.NewReader(body))
	require.NoError(e.t, err)
	req.Header.Set(DeviceIDHeader, deviceID)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer func() { require.NoError(e.t, resp.Body.Close()) }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return resp, b
}

func TestMetadataService(t *testing.T) {
	tm := DefaultTimings()
	tm.PortConversion = 0
	e := newEnv(t, withTimings(tm))
	d := e.createActive("node-1", func(in *metalv1.DeviceCreateInMetroInput) { in.Tags = []string{"a"} })
	queued := e.create(ipxeInput("node-0"))

	resp, body := e.metadataCall(http.MethodGet, "/metadata", d.GetId(), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var md Metadata
	require.NoError(t, json.Unmarshal(body, &md))
	assert.Equal(t, d.GetId(), md.ID)
	assert.Equal(t, "node-1", md.Hostname)
	assert.Equal(t, "c3.small.x86", md.Plan)
	assert.Equal(t, "da", md.Metro)
	assert.Equal(t, []string{"a"}, md.Tags)
	assert.Equal(t, 4, md.Network.Bonding.Mode)
	require.Len(t, md.Network.Interfaces, 2)
	assert.Equal(t, e.port(d, "eth0").Data.GetMac(), md.Network.Interfaces[0].MAC)
	assert.Equal(t, "bond0", md.Network.Interfaces[0].Bond)
	assert.Len(t, md.Network.Addresses, 3)
	assert.Equal(t, e.srv.URL+"/events", md.UserStateURL)

	resp, body = e.metadataCall(http.MethodGet, "/userdata", d.GetId(), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "#cloud-config\nhostname: node-1\n", string(body))

	state, err := json.Marshal(UserState{State: "succeeded", Code: 1000, Message: "{{ device }} installed Harvester"})
	require.NoError(t, err)
	resp, _ = e.metadataCall(http.MethodPost, "/events", d.GetId(), state)
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	events, err := e.sim.DeviceEvents(d.GetId())
	require.NoError(t, err)
	assert.Equal(t, EventUserState, events[0].GetType())
	assert.Equal(t, "succeeded", events[0].GetState())
	assert.Equal(t, "node-1 installed Harvester", events[0].GetInterpolated())

	t.Run("unknown or not yet active device", func(t *testing.T) {
		for _, id := range []string{"", "nope", queued.GetId()} {
			resp, _ := e.metadataCall(http.MethodGet, "/metadata", id, nil)
			assert.Equal(t, http.StatusNotFound, resp.StatusCode)
		}
	})
	t.Run("pure layer 2 cannot reach it", func(t *testing.T) {
		n := netClient{env: e, deviceID: d.GetId()}
		n.convert2(n.portID("bond0"))
		resp, body := e.metadataCall(http.MethodGet, "/metadata", d.GetId(), nil)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		assert.Contains(t, string(body), "layer2-bonded")
	})
}

func TestMetadataFaultsOnlyWhenNamed(t *testing.T) {
	e := newEnv(t)
	d := e.createActive("node-1")
	e.sim.InjectFault(Fault{Kind: FaultServerError})
	resp, _ := e.metadataCall(http.MethodGet, "/userdata", d.GetId(), nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "an unnamed fault hits the API only")

	e.sim.InjectFault(Fault{Kind: FaultServerError, Status: http.StatusServiceUnavailable, Operations: []string{OpUserdata}})
	resp, _ = e.metadataCall(http.MethodGet, "/userdata", d.GetId(), nil)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
}
