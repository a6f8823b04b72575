package inventory

import (
	"sync"
	"time"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
)

// requestGrace is how long after a new spec carrying a power request the
// chain leaves the Inventory's status alone, unless another write of the
// object comes first. Harvester's powerAction writes the request in two
// calls, the spec, then the status (clearing lastJobName) with the
// resourceVersion the first returned: any status write of the chain in
// between, which the spec's change itself triggers (the observed generation
// moves, and a first request is taken at once), makes Harvester answer the
// user 409 although the request stands. Its second call follows the first
// at once, so two seconds leave it room; a request whose status write never
// comes (it met such a conflict anyway) is taken up after them.
const requestGrace = 2 * time.Second

// specClock remembers when this process first saw each Inventory's
// generation, in memory only: after a restart a spec is as new as the
// process.
type specClock struct {
	mu   sync.Mutex
	seen map[string]seenGeneration
}

type seenGeneration struct {
	generation int64
	// resourceVersion is the object's when the generation was first seen:
	// a later write (Harvester's second call) ends the wait.
	resourceVersion string
	at              time.Time
}

func newSpecClock() *specClock { return &specClock{seen: map[string]seenGeneration{}} }

// settling is how long the status of inv (under key) is still left to
// Harvester's second call: zero unless its spec asks for power, changed
// since the chain last wrote the status, and nothing was written since.
func (c *specClock) settling(key string, inv *seederv1alpha1.Inventory, now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.seen[key]
	if !ok || s.generation != inv.Generation {
		s = seenGeneration{generation: inv.Generation, resourceVersion: inv.ResourceVersion, at: now}
		c.seen[key] = s
	}
	hw := inv.Status.Hardware
	if inv.Spec.PowerActionRequested == "" || hw != nil && hw.ObservedGeneration == inv.Generation ||
		inv.ResourceVersion != s.resourceVersion {
		return 0
	}
	return max(0, requestGrace-now.Sub(s.at))
}

// forget drops an Inventory that is gone.
func (c *specClock) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.seen, key)
}
