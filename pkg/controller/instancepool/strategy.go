package instancepool

import (
	"k8s.io/apimachinery/pkg/util/intstr"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// rolloutBounds resolves spec.rollout against count as a Deployment resolves
// its rolling update: maxSurge rounded up, maxUnavailable rounded down, and
// one server allowed to be unavailable when both come to 0 (percentages of a
// small pool), so that a rollout can always move.
func rolloutBounds(pool *equinixv1.InstancePool) (surge, unavailable int) {
	count := int(pool.Spec.Count)
	surge = resolveBound(pool.Spec.Rollout.MaxSurge, 1, count, true)
	unavailable = min(resolveBound(pool.Spec.Rollout.MaxUnavailable, 0, count, false), count)
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return surge, unavailable
}

// resolveBound reads a number or a percentage of count; def stands in for
// an unset or unreadable value (admission refuses those, an object stored
// before the field existed has none).
func resolveBound(v *intstr.IntOrString, def, count int, roundUp bool) int {
	if v == nil {
		return def
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, count, roundUp)
	if err != nil || n < 0 {
		return def
	}
	return n
}

// fleet is a pool's servers as a rollout counts them.
type fleet struct {
	count, surge, unavailable int
	// outdated and current are the servers not being removed, of an older
	// and of the current template.
	outdated, current []*equinixv1.Instance
	// removing counts the servers being removed: their devices still exist.
	removing int
	// available says whether a server counts as available.
	available func(*equinixv1.Instance) bool
	// held says why a server may not be removed now ("" when it may).
	held func(*equinixv1.Instance) string
}

// rolloutStep is what a rollout may do now.
type rolloutStep struct {
	// create is how many servers of the current template to add.
	create int
	// remove are the old servers to remove now, in order.
	remove []*equinixv1.Instance
	// held says why old servers the budget allowed to go stay.
	held []string
}

// planRollout is a Deployment's rolling update counted in servers, with
// one difference: a server being removed still counts towards count +
// maxSurge until its device is gone, since it is billed and holds its
// hardware (a reservation cannot take a new server before).
//
// New servers are added up to count, as long as the pool holds fewer than
// count + maxSurge. Old servers go as long as count - maxUnavailable stay
// available, counting new servers not yet available against that budget:
// first old servers that are not available (removing them costs nothing),
// then available ones.
func planRollout(f fleet) rolloutStep {
	var step rolloutStep
	active := len(f.outdated) + len(f.current)
	step.create = surgeRoom(f.count, f.surge, active+f.removing, len(f.current))

	availableOld, availableNew := countAvailable(f.outdated, f.available), countAvailable(f.current, f.available)
	minAvailable := max(0, f.count-f.unavailable)
	budget := active - minAvailable - (len(f.current) - availableNew)
	spare := availableOld + availableNew - minAvailable
	order := scaleDownOrder(f.outdated)
	for _, inst := range order {
		if budget > 0 && !f.available(inst) && step.take(inst, f.held) {
			budget--
		}
	}
	for _, inst := range order {
		if budget > 0 && spare > 0 && f.available(inst) && step.take(inst, f.held) {
			budget--
			spare--
		}
	}
	return step
}

// take adds inst to the removals unless a guard holds it.
func (s *rolloutStep) take(inst *equinixv1.Instance, held func(*equinixv1.Instance) string) bool {
	if why := held(inst); why != "" {
		s.held = append(s.held, why)
		return false
	}
	s.remove = append(s.remove, inst)
	return true
}

func countAvailable(insts []*equinixv1.Instance, available func(*equinixv1.Instance) bool) int {
	n := 0
	for _, i := range insts {
		if available(i) {
			n++
		}
	}
	return n
}
