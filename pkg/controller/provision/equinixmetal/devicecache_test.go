package equinixmetal

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// countingClient answers GetDevice with a fresh device and counts the calls.
type countingClient struct {
	metal.Client
	gets int
}

func (c *countingClient) GetDevice(_ context.Context, id string) (*metal.Device, error) {
	c.gets++
	return &metal.Device{ID: id, State: metal.DeviceStateActive, Ports: []metal.Port{{ID: "port-1", Name: "eth1"}}}, nil
}
func (c *countingClient) AssignVLAN(context.Context, string, string) error { return nil }
func (c *countingClient) Reinstall(context.Context, string, metal.ReinstallRequest) error {
	return nil
}
func (c *countingClient) DeleteDevice(context.Context, string, bool) error { return nil }
func (c *countingClient) UpdateDevice(_ context.Context, id string, _ metal.DeviceUpdate) (*metal.Device, error) {
	return &metal.Device{ID: id}, nil
}

func TestDeviceCache(t *testing.T) {
	now := time.Unix(1000, 0)
	cache := newDeviceCache(5 * time.Second)
	cache.now = func() time.Time { return now }
	inner := &countingClient{}
	c := readCachingClient{Client: inner, cache: cache}
	ctx := context.Background()

	d1, err := c.GetDevice(ctx, "dev-1")
	require.NoError(t, err)
	d2, _ := c.GetDevice(ctx, "dev-1")
	assert.Equal(t, 1, inner.gets, "a read within the TTL is served from the cache")
	d2.Ports[0].Name = "changed"
	d3, _ := c.GetDevice(ctx, "dev-1")
	assert.Equal(t, "eth1", d3.Ports[0].Name, "callers get copies")
	assert.Equal(t, d1.ID, d3.ID)

	require.NoError(t, c.AssignVLAN(ctx, "port-1", "vlan"))
	_, _ = c.GetDevice(ctx, "dev-1")
	assert.Equal(t, 2, inner.gets, "a port change forgets the port's device")

	require.NoError(t, c.Reinstall(ctx, "dev-1", metal.ReinstallRequest{}))
	_, _ = c.GetDevice(ctx, "dev-1")
	assert.Equal(t, 2, inner.gets, "a reinstall keeps the read: nothing waits on it through the device")
	_, err = c.UpdateDevice(ctx, "dev-1", metal.DeviceUpdate{})
	require.NoError(t, err)
	_, _ = c.GetDevice(ctx, "dev-1")
	assert.Equal(t, 2, inner.gets, "an update of userdata or the script keeps it")
	require.NoError(t, c.DeleteDevice(ctx, "dev-1", false))
	_, _ = c.GetDevice(ctx, "dev-1")
	assert.Equal(t, 3, inner.gets, "a delete forgets it")

	now = now.Add(5 * time.Second)
	_, _ = c.GetDevice(ctx, "dev-1")
	assert.Equal(t, 4, inner.gets, "entries expire")
}
