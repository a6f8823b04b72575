package metal

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type countingPlans struct {
	Client
	calls int
	err   error
}

func (c *countingPlans) ListPlans(context.Context) ([]Plan, error) {
	c.calls++
	if c.err != nil {
		return nil, c.err
	}
	return []Plan{{Slug: "c3.small.x86"}}, nil
}

// The list is kept for the TTL; a failure is asked again after a minute,
// and a failure after a list keeps serving that list.
func TestPlanCatalogKeepsTheList(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewPlanCatalog(0, func() time.Time { return now })
	client := &countingPlans{err: errors.New("boom")}
	ctx := context.Background()

	_, err := c.Plans(ctx, client)
	require.Error(t, err)
	_, err = c.Plans(ctx, client)
	require.Error(t, err)
	assert.Equal(t, 1, client.calls, "a failure is not asked again for a minute")

	now = now.Add(planCatalogRetry)
	client.err = nil
	p, ok, err := c.Plan(ctx, client, "c3.small.x86")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "c3.small.x86", p.Slug)
	_, ok, _ = c.Plan(ctx, client, "nope")
	assert.False(t, ok)
	now = now.Add(DefaultPlanCatalogTTL - time.Second)
	_, _ = c.Plans(ctx, client)
	assert.Equal(t, 2, client.calls, "the list is kept for the TTL")

	now = now.Add(time.Second)
	client.err = errors.New("boom")
	plans, err := c.Plans(ctx, client)
	require.NoError(t, err, "a failed refresh serves the list it had")
	assert.Len(t, plans, 1)
	_, _ = c.Plans(ctx, client)
	assert.Equal(t, 3, client.calls, "and asks again only a minute later")
	now = now.Add(planCatalogRetry)
	_, _ = c.Plans(ctx, client)
	assert.Equal(t, 4, client.calls)
}
