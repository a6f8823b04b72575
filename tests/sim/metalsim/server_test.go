package metalsim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServer(t *testing.T) {
	sim := New(Options{Clock: NewFakeClock(testStart), Timings: DefaultTimings()})
	sim.AddProject(testToken, testProject)
	srv, err := NewServer(sim, "")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(srv.URL, "http://127.0.0.1:"))
	assert.True(t, strings.HasSuffix(srv.URL, "/metal/v1"))
	assert.Equal(t, srv.RootURL+"/metal/v1", srv.URL)

	client := newClient(srv.URL, testToken)
	list, _, err := client.DevicesApi.FindProjectDevices(t.Context(), testProject).Execute()
	require.NoError(t, err)
	assert.Empty(t, list.Devices)
	require.NoError(t, srv.Close())
}
