package equinixmetal

import (
	"context"
	"sync"
	"time"

	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// deviceCache remembers device reads for a moment. Every status write of an
// Instance re-runs its pass, and the steps of a pass (the device's state,
// its ports) each read the device; without it one step of a server cost
// several identical reads. A call that changes the device's ports or power state, or
// deletes it, forgets it, so a read after such a change always goes to the
// API, and entries live shorter than the poll interval, so waiting on Equinix
// is unaffected.
type deviceCache struct {
	ttl time.Duration
	now func() time.Time

	mu        sync.Mutex
	devices   map[string]cachedDevice
	portOwner map[string]string
	// readAt is when each device was last read from the API, kept longer
	// than the entries themselves.
	readAt map[string]time.Time
}

// readAtKept is how long a device's last read time is remembered.
const readAtKept = time.Hour

type cachedDevice struct {
	dev *metal.Device
	at  time.Time
}

func newDeviceCache(ttl time.Duration) *deviceCache {
	return &deviceCache{ttl: ttl, now: time.Now, devices: map[string]cachedDevice{}, portOwner: map[string]string{},
		readAt: map[string]time.Time{}}
}

func (c *deviceCache) get(id string) (*metal.Device, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.devices[id]
	if !ok || c.now().Sub(e.at) >= c.ttl {
		return nil, false
	}
	return e.dev.DeepCopy(), true
}

func (c *deviceCache) put(dev *metal.Device) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.devices[dev.ID] = cachedDevice{dev: dev.DeepCopy(), at: now}
	c.readAt[dev.ID] = now
	for _, p := range dev.Ports {
		c.portOwner[p.ID] = dev.ID
	}
	// Keep the maps from growing with devices long gone.
	for id, e := range c.devices {
		if now.Sub(e.at) >= c.ttl {
			delete(c.devices, id)
		}
	}
	for id, at := range c.readAt {
		if now.Sub(at) >= readAtKept {
			delete(c.readAt, id)
		}
	}
}

// readWithin reports whether the device was read from the API less than d
// ago, by this process.
func (c *deviceCache) readWithin(id string, d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.readAt[id]
	return ok && c.now().Sub(at) < d
}

func (c *deviceCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.devices, id)
}

func (c *deviceCache) forgetPort(portID string) {
	c.mu.Lock()
	id := c.portOwner[portID]
	c.mu.Unlock()
	if id != "" {
		c.forget(id)
	}
}

// readCachingClient is a metal.Client whose device reads go through the cache.
type readCachingClient struct {
	metal.Client
	cache *deviceCache
}

func (c readCachingClient) GetDevice(ctx context.Context, id string) (*metal.Device, error) {
	if dev, ok := c.cache.get(id); ok {
		return dev, nil
	}
	dev, err := c.Client.GetDevice(ctx, id)
	if err == nil {
		c.cache.put(dev)
	}
	return dev, err
}

func (c readCachingClient) DeleteDevice(ctx context.Context, id string, force bool) error {
	defer c.cache.forget(id)
	return c.Client.DeleteDevice(ctx, id, force)
}

// UpdateDevice (the installer script and userdata) and Reinstall keep the
// cached read: an update changes nothing the steps read from a device
// (state, ports, addresses), nothing waits on a reinstall through the device
// (the Node reports the join), and the status writes that record them would
// otherwise cost reads that see nothing new. Polls read afresh once the
// entry expires.
func (c readCachingClient) Reinstall(ctx context.Context, id string, req metal.ReinstallRequest) error {
	return c.Client.Reinstall(ctx, id, req)
}

func (c readCachingClient) PowerOn(ctx context.Context, id string) error {
	defer c.cache.forget(id)
	return c.Client.PowerOn(ctx, id)
}

func (c readCachingClient) PowerOff(ctx context.Context, id string) error {
	defer c.cache.forget(id)
	return c.Client.PowerOff(ctx, id)
}

func (c readCachingClient) Reboot(ctx context.Context, id string) error {
	defer c.cache.forget(id)
	return c.Client.Reboot(ctx, id)
}

func (c readCachingClient) BondPort(ctx context.Context, id string, bulk bool) (*metal.Port, error) {
	defer c.cache.forgetPort(id)
	return c.Client.BondPort(ctx, id, bulk)
}

func (c readCachingClient) DisbondPort(ctx context.Context, id string, bulk bool) (*metal.Port, error) {
	defer c.cache.forgetPort(id)
	return c.Client.DisbondPort(ctx, id, bulk)
}

func (c readCachingClient) ConvertLayer2(ctx context.Context, id string) (*metal.Port, error) {
	defer c.cache.forgetPort(id)
	return c.Client.ConvertLayer2(ctx, id)
}

func (c readCachingClient) ConvertLayer3(ctx context.Context, id string) (*metal.Port, error) {
	defer c.cache.forgetPort(id)
	return c.Client.ConvertLayer3(ctx, id)
}

func (c readCachingClient) AssignVLAN(ctx context.Context, portID, vnid string) error {
	defer c.cache.forgetPort(portID)
	return c.Client.AssignVLAN(ctx, portID, vnid)
}

func (c readCachingClient) UnassignVLAN(ctx context.Context, portID, vnid string) error {
	defer c.cache.forgetPort(portID)
	return c.Client.UnassignVLAN(ctx, portID, vnid)
}

func (c readCachingClient) AssignNativeVLAN(ctx context.Context, portID, vnid string) error {
	defer c.cache.forgetPort(portID)
	return c.Client.AssignNativeVLAN(ctx, portID, vnid)
}

func (c readCachingClient) RemoveNativeVLAN(ctx context.Context, portID string) error {
	defer c.cache.forgetPort(portID)
	return c.Client.RemoveNativeVLAN(ctx, portID)
}
