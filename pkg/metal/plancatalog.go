package metal

import (
	"context"
	"strings"
	"sync"
	"time"
)

// DefaultPlanCatalogTTL is how long the plans list is kept. Plans are the same
// for every project and change a few times a year, so one list serves every
// pool and every node's facts for an hour.
const DefaultPlanCatalogTTL = time.Hour

// planCatalogRetry is how soon a failed list is asked again: never per pass.
const planCatalogRetry = time.Minute

// PlanCatalog keeps the hardware plans list, shared by everything that reads
// plans (the install disk check before a create, the hardware facts). Safe
// for concurrent use: callers arriving while a list is under way wait for its
// answer rather than sending their own.
type PlanCatalog struct {
	ttl time.Duration
	now func() time.Time

	mu       sync.Mutex
	plans    []Plan
	listed   bool
	err      error
	askedAt  time.Time
	listedAt time.Time
}

// NewPlanCatalog keeps the list for ttl (DefaultPlanCatalogTTL when not
// positive) on the clock now (time.Now when nil).
func NewPlanCatalog(ttl time.Duration, now func() time.Time) *PlanCatalog {
	if ttl <= 0 {
		ttl = DefaultPlanCatalogTTL
	}
	if now == nil {
		now = time.Now
	}
	return &PlanCatalog{ttl: ttl, now: now}
}

// Plans returns the plans, listing them with client when the kept list is
// older than the TTL. A failed list keeps serving the list it had; without
// one, its error is returned until the next attempt, a minute later.
func (c *PlanCatalog) Plans(ctx context.Context, client Client) ([]Plan, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	due := !c.listed || now.Sub(c.listedAt) >= c.ttl
	if due && (c.err == nil || now.Sub(c.askedAt) >= planCatalogRetry) {
		plans, err := client.ListPlans(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			// The caller gave up: that says nothing about the API.
			return c.answer(err)
		case err != nil:
			c.err, c.askedAt = err, now
		default:
			c.plans, c.listed, c.err, c.listedAt = plans, true, nil, now
		}
	}
	return c.answer(c.err)
}

func (c *PlanCatalog) answer(err error) ([]Plan, error) {
	if c.listed {
		return c.plans, nil
	}
	return nil, err
}

// Plan returns the plan with slug (in any case) from Plans.
func (c *PlanCatalog) Plan(ctx context.Context, client Client, slug string) (Plan, bool, error) {
	plans, err := c.Plans(ctx, client)
	if err != nil {
		return Plan{}, false, err
	}
	for _, p := range plans {
		if strings.EqualFold(p.Slug, slug) {
			return p, true, nil
		}
	}
	return Plan{}, false, nil
}
