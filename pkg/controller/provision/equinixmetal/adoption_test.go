package equinixmetal

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metaltest"
)

// A wave of first creates in one pool shares one list of the pool's devices;
// a new list is taken once the last is older than the ttl.
func TestAdoptionListsAreSharedByAWave(t *testing.T) {
	sim, client := metaltest.NewClient(t, testToken, testProject)
	ctx := context.Background()
	mine, err := client.CreateDevice(ctx, metal.CreateDeviceRequest{Hostname: "a", Plan: "c3.small.x86", Metro: "da",
		OperatingSystem: "custom_ipxe", Userdata: "#!ipxe", BillingCycle: "hourly",
		Tags: []string{equinixv1.PoolTag("workers"), equinixv1.InstanceTag("uid-a")}})
	require.NoError(t, err)

	lists := newAdoptionLists(time.Minute)
	now := time.Unix(1000, 0)
	lists.now = func() time.Time { return now }
	var wg sync.WaitGroup
	found := make([][]metal.Device, 8)
	for i := range found {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tag := equinixv1.InstanceTag("uid-other")
			if i == 0 {
				tag = equinixv1.InstanceTag("uid-a")
			}
			devs, err := lists.devicesOf(ctx, client, equinixv1.PoolTag("workers"), tag)
			assert.NoError(t, err)
			found[i] = devs
		}()
	}
	wg.Wait()
	require.Len(t, found[0], 1)
	assert.Equal(t, mine.ID, found[0][0].ID)
	for _, f := range found[1:] {
		assert.Empty(t, f)
	}
	assert.Len(t, sim.RequestsFor(metalsim.OpFindProjectDevices), 1, "eight creates, one list")

	_, err = lists.devicesOf(ctx, client, equinixv1.PoolTag("edge"), equinixv1.InstanceTag("uid-b"))
	require.NoError(t, err)
	assert.Len(t, sim.RequestsFor(metalsim.OpFindProjectDevices), 2, "another pool lists its own")

	now = now.Add(time.Minute)
	_, err = lists.devicesOf(ctx, client, equinixv1.PoolTag("workers"), equinixv1.InstanceTag("uid-c"))
	require.NoError(t, err)
	assert.Len(t, sim.RequestsFor(metalsim.OpFindProjectDevices), 3, "a later wave lists again")
}
