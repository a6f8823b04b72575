package equinixmetal

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

// Ceilings of the paced calls' doubling waits.
const (
	maxCreateBackoff        = 30 * time.Minute
	maxUserdataClearBackoff = 30 * time.Minute
)

// doubling is base doubled per failure after the first, at most ceiling.
func doubling(base time.Duration, failures int32, ceiling time.Duration) time.Duration {
	d := base
	for i := int32(1); i < failures && d < ceiling; i++ {
		d *= 2
	}
	return min(d, ceiling)
}

// waitLeft is how long a paced call must still wait; zero when it may go.
func waitLeft(rs *equinixv1.RetryStatus, now time.Time) time.Duration {
	if rs == nil {
		return 0
	}
	return max(0, rs.NotBefore.Sub(now))
}

// backOff records a failed call in *rs and returns the wait before the next
// one. A refusal that says nothing about the request itself (throttling, a
// credentials problem) waits what it must without counting towards the
// doubling; the others double from base.
func (r *run) backOff(rs **equinixv1.RetryStatus, err error, reason string, base, ceiling time.Duration) time.Duration {
	prev := int32(0)
	if *rs != nil {
		prev = (*rs).Failures
	}
	failures, wait := prev, time.Duration(0)
	switch failure.ClassOf(err) {
	case failure.Throttled:
		wait = failure.RetryAfter(err)
		if wait <= 0 {
			wait = r.PollInterval()
		}
	case failure.Unauthorized, failure.Forbidden:
		wait = authRetry
	default:
		failures = prev + 1
		wait = doubling(base, failures, ceiling)
	}
	// Stored times have whole seconds: round up, so that the call is never
	// sent before the wait it was given.
	notBefore := r.Now().Add(wait + time.Second - 1).Truncate(time.Second)
	*rs = &equinixv1.RetryStatus{Failures: failures, NotBefore: metav1.NewTime(notBefore), Reason: reason}
	r.Requeue(notBefore.Sub(r.Now()))
	return wait
}
