package vlans

import (
	"strings"
	"sync"
	"time"
)

// IDCache remembers a metro's VLAN IDs for a moment, so that the servers of a
// pool converging together list the metro's VLANs once rather than each. A
// stale entry can only name a VLAN deleted since; callers Forget the metro
// when a call with one of its IDs fails, and after deleting VLANs.
type IDCache struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	entries map[string]idEntry
	// metros serializes Ensure per project and metro: the servers of a new
	// pool reach their networking together, and without it each listed the
	// metro's VLANs, found them missing, and tried to create them.
	metros map[string]*sync.Mutex
}

type idEntry struct {
	ids map[int]string
	at  time.Time
}

// NewIDCache keeps entries for ttl.
func NewIDCache(ttl time.Duration) *IDCache {
	return &IDCache{ttl: ttl, now: time.Now, entries: map[string]idEntry{}, metros: map[string]*sync.Mutex{}}
}

func cacheKey(project, metro string) string { return project + "/" + strings.ToLower(metro) }

func (c *IDCache) lookup(project, metro string, vxlans []int, attached []string) (map[int]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[cacheKey(project, metro)]
	if !ok || c.now().Sub(e.at) >= c.ttl {
		return nil, false
	}
	for _, vx := range vxlans {
		if _, ok := e.ids[vx]; !ok {
			return nil, false
		}
	}
	known := make(map[string]bool, len(e.ids))
	for _, id := range e.ids {
		known[id] = true
	}
	for _, id := range attached {
		if !known[id] {
			return nil, false
		}
	}
	out := make(map[int]string, len(e.ids))
	for vx, id := range e.ids {
		out[vx] = id
	}
	return out, true
}

func (c *IDCache) store(project, metro string, ids map[int]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := make(map[int]string, len(ids))
	for k, v := range ids {
		cp[k] = v
	}
	c.entries[cacheKey(project, metro)] = idEntry{ids: cp, at: c.now()}
}

// lockMetro holds the metro until the returned func is called.
func (c *IDCache) lockMetro(project, metro string) func() {
	key := cacheKey(project, metro)
	c.mu.Lock()
	m, ok := c.metros[key]
	if !ok {
		m = &sync.Mutex{}
		c.metros[key] = m
	}
	c.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// Forget drops a metro's entry.
func (c *IDCache) Forget(project, metro string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, cacheKey(project, metro))
}
