package metalsim

import (
	"strconv"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

const (
	defaultPerPage = 10
	maxPerPage     = 1000
)

type pageRequest struct {
	page, perPage int
}

// pagination reads page (from 1) and per_page (1-1000, default 10). Out of
// range or malformed values are clamped rather than refused: the spec
// lists no 422 for list operations.
func (c *call) pagination() pageRequest {
	pr := pageRequest{page: 1, perPage: defaultPerPage}
	if n, err := strconv.Atoi(c.query("page")); err == nil && n > 1 {
		pr.page = n
	}
	if n, err := strconv.Atoi(c.query("per_page")); err == nil && n >= 1 {
		pr.perPage = min(n, maxPerPage)
	}
	return pr
}

// bounds returns the slice bounds of the page within total items.
func (pr pageRequest) bounds(total int) (lo, hi int) {
	lo = min((pr.page-1)*pr.perPage, total)
	hi = min(lo+pr.perPage, total)
	return lo, hi
}

// meta fills every field ExecuteWithPagination reads (current_page and
// last_page) plus the links, which keep the request's other parameters.
func (c *call) meta(total int, pr pageRequest) *metalv1.Meta {
	last := max((total+pr.perPage-1)/pr.perPage, 1)
	link := func(page int) *metalv1.Href {
		q := c.r.URL.Query()
		q.Set("page", strconv.Itoa(page))
		q.Set("per_page", strconv.Itoa(pr.perPage))
		return &metalv1.Href{Href: c.r.URL.Path + "?" + q.Encode()}
	}
	m := &metalv1.Meta{
		First:       link(1),
		Last:        link(last),
		Self:        link(pr.page),
		Total:       ptr(int32(total)),
		CurrentPage: ptr(int32(pr.page)),
		LastPage:    ptr(int32(last)),
	}
	if pr.page < last {
		m.Next = link(pr.page + 1)
	}
	if pr.page > 1 {
		m.Previous = link(min(pr.page-1, last))
	}
	return m
}
