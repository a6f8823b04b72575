package metal

import (
	"context"
	"net/http"

	"github.com/equinix/equinix-sdk-go/services/metalv1"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

func (c *sdkClient) ListDeviceEvents(ctx context.Context, id string) ([]Event, error) {
	if err := requireID(OpListDeviceEvents, "device ID", id); err != nil {
		return nil, err
	}
	return paginate(ctx, c, OpListDeviceEvents,
		func(ctx context.Context, page int32) ([]metalv1.Event, *metalv1.Meta, *http.Response, error) {
			list, resp, err := c.api.EventsApi.FindDeviceEvents(ctx, id).Page(page).PerPage(perPage).Execute()
			if list == nil {
				return nil, nil, resp, err
			}
			return list.Events, list.Meta, resp, err
		},
		func(e *metalv1.Event) (Event, bool) { return fromEvent(e), true })
}

// ListProjectEvents reads newest-first pages until one reaches past Since.
// Events logged while it reads push older ones onto later pages, so an
// event can come twice; it is kept once.
func (c *sdkClient) ListProjectEvents(ctx context.Context, opts ListEventsOptions) ([]Event, error) {
	var out []Event
	seen := map[string]bool{}
	for page := int32(1); page <= maxPages; page++ {
		var list *metalv1.EventList
		err := c.do(ctx, OpListProjectEvents, func(ctx context.Context) (resp *http.Response, err error) {
			list, resp, err = c.api.EventsApi.FindProjectEvents(ctx, c.projectID).Page(page).PerPage(perPage).Execute()
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		reachedSince := false
		for i := range list.Events {
			e := fromEvent(&list.Events[i])
			if !opts.Since.IsZero() && e.CreatedAt.Before(opts.Since) {
				reachedSince = true
				continue
			}
			if !seen[e.ID] {
				seen[e.ID] = true
				out = append(out, e)
			}
		}
		current, last := list.Meta.GetCurrentPage(), list.Meta.GetLastPage()
		if reachedSince || current <= 0 || last <= current {
			return out, nil
		}
		page = current
	}
	return nil, &failure.Error{Seam: Seam, Op: OpListProjectEvents, Class: failure.Unknown, Message: "the list did not end after 1000 pages"}
}
