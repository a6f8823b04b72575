package metalsim

import (
	"slices"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

func (s *Simulator) findPlans(c *call) (reply, error) {
	slug := c.query("slug")
	cats := c.list("categories[]")
	list := metalv1.PlanList{Plans: []metalv1.Plan{}}
	for _, p := range catalogPlans {
		if slug != "" && p.slug != slug {
			continue
		}
		if len(cats) > 0 && !slices.ContainsFunc(cats, func(cat string) bool { return slices.Contains(p.categories, cat) }) {
			continue
		}
		list.Plans = append(list.Plans, p.plan())
	}
	return jsonReply(200, list)
}
