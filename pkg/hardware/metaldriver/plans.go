package metaldriver

import (
	"context"
	"sync"
	"time"

	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// planCatalog keeps the plans API's answer: plans are the same for every
// project, and change rarely.
type planCatalog struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	plans   map[string]metal.Plan
	fetched time.Time
}

// get returns the plan with slug, reading the catalog when it is older
// than the TTL. A failed read keeps serving the catalog it has.
func (c *planCatalog) get(ctx context.Context, client metal.Client, slug string) (metal.Plan, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.plans == nil || c.now().Sub(c.fetched) > c.ttl {
		plans, err := client.ListPlans(ctx)
		switch {
		case err == nil:
			c.plans = make(map[string]metal.Plan, len(plans))
			for _, p := range plans {
				c.plans[p.Slug] = p
			}
			c.fetched = c.now()
		case c.plans == nil:
			return metal.Plan{}, false, err
		}
	}
	p, ok := c.plans[slug]
	return p, ok, nil
}
