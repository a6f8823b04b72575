package chaos

import (
	"math/rand"

	"k8s.io/apimachinery/pkg/util/intstr"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// The rollout bounds a pool may get: the default (surge 1, none
// unavailable), in place, a fast one, and percentages of its count.
var rolloutChoices = [][2]string{{"1", "0"}, {"0", "1"}, {"2", "1"}, {"50%", "34%"}, {"0", "50%"}, {"100%", "0"}}

// rolloutPlanner draws a pool's rollout bounds and project from a
// generator of its own, so that adding these choices left the rest of
// every seed's plan (and replays of the seeds that found bugs) as it was.
type rolloutPlanner struct{ rng *rand.Rand }

func newRolloutPlanner(seed int64) rolloutPlanner {
	return rolloutPlanner{rng: rand.New(rand.NewSource(seed*7919 + 17))}
}

// bounds picks a pool's spec.rollout.
func (p rolloutPlanner) bounds(spec *poolSpec) {
	c := rolloutChoices[p.rng.Intn(len(rolloutChoices))]
	spec.Surge, spec.Unavailable = c[0], c[1]
}

// create picks, for a new pool, its bounds and whether it lives in project
// B through a credentials Secret of its own (a third of the pools).
func (p rolloutPlanner) create(spec *poolSpec) {
	p.bounds(spec)
	spec.ProjectB = p.rng.Intn(3) == 0
}

// retype keeps a pool's bounds or, half the time, picks new ones with its
// new template: the rollout it starts runs under them.
func (p rolloutPlanner) retype(spec *poolSpec) {
	if p.rng.Intn(2) == 0 {
		p.bounds(spec)
	}
}

// rolloutStrategy is the spec.rollout of a pool spec.
func rolloutStrategy(spec poolSpec) equinixv1.RolloutStrategy {
	surge, unavailable := intstr.Parse(spec.Surge), intstr.Parse(spec.Unavailable)
	return equinixv1.RolloutStrategy{MaxSurge: &surge, MaxUnavailable: &unavailable}
}

// rolloutBounds resolves spec.rollout against count as docs/pools.md states:
// maxSurge rounded up, maxUnavailable rounded down (at most count), and one
// server unavailable when both come to 0. The campaign's own reading,
// written apart from the controller's.
func rolloutBounds(r equinixv1.RolloutStrategy, count int) (surge, unavailable int) {
	resolve := func(v *intstr.IntOrString, def int, up bool) int {
		if v == nil {
			return def
		}
		n, err := intstr.GetScaledValueFromIntOrPercent(v, count, up)
		if err != nil {
			return def
		}
		return n
	}
	surge = resolve(r.MaxSurge, 1, true)
	unavailable = min(resolve(r.MaxUnavailable, 0, false), count)
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return surge, unavailable
}

// projectBPools names the plan's pools that live in project B.
func (pl plan) projectBPools() map[string]bool {
	out := map[string]bool{}
	for _, s := range pl.Steps {
		if s.Kind == actCreatePool && s.Pool.ProjectB {
			out[s.Pool.Name] = true
		}
	}
	return out
}

// plans are the two plans a rollout moves a pool between.
var plans = [2]string{"c3.small.x86", "m3.small.x86"}

// otherPlan is the plan a rollout moves a pool to.
func otherPlan(current string) string {
	if current == plans[1] {
		return plans[0]
	}
	return plans[1]
}

// rollout moves a pool to the other plan and, half the time, gives it new
// bounds: what it returns is the pool's spec after the step.
func (p rolloutPlanner) rollout(spec *poolSpec) poolSpec {
	spec.Plan = otherPlan(spec.Plan)
	p.retype(spec)
	return *spec
}

// final draws the bounds of each pool's quiet rollout after the chaos.
func (p rolloutPlanner) final(pools []*poolState) map[string][2]string {
	out := map[string][2]string{}
	for _, ps := range pools {
		out[ps.spec.Name] = rolloutChoices[p.rng.Intn(len(rolloutChoices))]
	}
	return out
}
