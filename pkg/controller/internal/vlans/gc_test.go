package vlans

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metaltest"
)

const (
	token   = "vlans-test-token"
	project = "0d7e3c1a-5b2f-4e6d-9c8b-7a6f5e4d3c2b"
)

func newClient(t *testing.T) (*metalsim.Simulator, metal.Client) {
	t.Helper()
	return metaltest.NewClient(t, token, project)
}

// The servers of a new pool reach their networking together: one of them
// lists the metro and creates the VLANs, the others use its result.
func TestConcurrentEnsureListsAndCreatesOnce(t *testing.T) {
	sim, client := newClient(t)
	cache := NewIDCache(30 * time.Second)
	const servers = 5
	results := make([]map[int]string, servers)
	var wg sync.WaitGroup
	for i := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids, _, err := Ensure(context.Background(), client, cache, "cluster", "sg", []int{1000, 1001}, nil)
			assert.NoError(t, err)
			results[i] = ids
		}()
	}
	wg.Wait()
	assert.Len(t, sim.RequestsFor(metalsim.OpFindVirtualNetworks), 1, "metro lists")
	assert.Len(t, sim.RequestsFor(metalsim.OpCreateVirtualNetwork), 2, "VLAN creates")
	for _, ids := range results {
		assert.Equal(t, results[0], ids)
		assert.Len(t, ids, 2)
	}
}

// A device read names its VLANs by ID: an ID the cached map lacks makes
// Ensure list the metro again, so that every VLAN on the ports resolves.
func TestEnsureResolvesAttachedVLANs(t *testing.T) {
	sim, client := newClient(t)
	cache := NewIDCache(30 * time.Second)
	ids, _, err := Ensure(context.Background(), client, cache, "cluster", "sg", []int{1000}, nil)
	require.NoError(t, err)
	other, err := client.CreateVLAN(context.Background(), metal.CreateVLANRequest{Metro: "sg", VXLAN: 2000})
	require.NoError(t, err)

	_, _, err = Ensure(context.Background(), client, cache, "cluster", "sg", []int{1000}, []string{ids[1000]})
	require.NoError(t, err)
	assert.Len(t, sim.RequestsFor(metalsim.OpFindVirtualNetworks), 1, "known IDs come from the cache")

	got, _, err := Ensure(context.Background(), client, cache, "cluster", "sg", []int{1000}, []string{other.ID})
	require.NoError(t, err)
	assert.Len(t, sim.RequestsFor(metalsim.OpFindVirtualNetworks), 2, "an unknown ID lists again")
	assert.Equal(t, other.ID, got[2000])
}
