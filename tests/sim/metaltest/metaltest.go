// Package metaltest gives unit tests a Metal client talking to an in-memory
// simulator through the real SDK, without a Kubernetes cluster.
package metaltest

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// NewClient starts a simulator with one project and returns it with a client
// of that project (no client-side rate limit). The server stops with the test.
func NewClient(t testing.TB, token, projectID string) (*metalsim.Simulator, metal.Client) {
	t.Helper()
	return NewClientTimeout(t, token, projectID, 5*time.Second)
}

// NewClientTimeout is NewClient with the client's per-request timeout, for
// tests of calls the client gives up on while the API still applies them.
func NewClientTimeout(t testing.TB, token, projectID string, timeout time.Duration) (*metalsim.Simulator, metal.Client) {
	t.Helper()
	sim := metalsim.New(metalsim.Options{Seed: 1})
	sim.AddProject(token, projectID)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	provider, err := metal.NewProvider(metal.Options{BaseURL: srv.URL + "/metal/v1", RequestsPerSecond: -1, Timeout: timeout})
	require.NoError(t, err)
	client, err := provider.Client(metal.Credentials{Token: token, ProjectID: projectID})
	require.NoError(t, err)
	return sim, client
}
