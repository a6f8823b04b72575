package bmcdriver

import (
	"hash/fnv"
	"time"
)

// phase is where within each interval a machine's polls fall: a hash of
// its key (its owner's UID), so a fleet's phases spread evenly over the
// interval whatever order its objects came in, and stay where they were
// across restarts of the controller.
func phase(key string, interval time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	h := fnv.New64a()
	// A hash never fails to write.
	_, _ = h.Write([]byte(key))
	return time.Duration(h.Sum64() % uint64(interval)) //nolint:gosec // G115: interval is positive (checked above), and the remainder is below it
}

// slotAfter is the first slot at or after t of a machine whose slots are
// its phase plus whole intervals, counted from the Unix epoch (a clock
// every replica and every restart shares).
func slotAfter(t time.Time, interval, phase time.Duration) time.Time {
	if interval <= 0 {
		return t
	}
	since := t.UnixNano() - int64(phase)
	k := since / int64(interval)
	if since%int64(interval) != 0 && since > 0 {
		k++
	}
	return time.Unix(0, k*int64(interval)+int64(phase))
}
