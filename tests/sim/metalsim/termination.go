package metalsim

import (
	"fmt"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

// A device's termination_time is acted on: at that time the platform
// reclaims it (deprovisioning, then gone), as it did with spot instances
// and with any device given a termination time. Setting the time records a
// termination notice.

// setTerminationLocked sets (or, with a zero t, clears) d's termination
// time, records the notice and schedules the reclaim. A time already past
// reclaims on the next access.
func (s *Simulator) setTerminationLocked(d *device, t, now time.Time) {
	d.termGen++
	if t.IsZero() {
		d.obj.TerminationTime = nil
		return
	}
	t = t.UTC()
	d.obj.TerminationTime = ptr(t)
	s.recordEventLocked(d, now, EventTerminationNotice, "scheduled",
		fmt.Sprintf("{{ device }} will be terminated at %s", t.Format(time.RFC3339)))
	gen := d.termGen
	s.scheduleLocked(now, max(t.Sub(now), 0), func(at time.Time) {
		if d.gone || d.termGen != gen || d.state == metalv1.DEVICESTATE_DEPROVISIONING {
			return
		}
		s.reclaimLocked(d, at)
	})
}

// reclaimLocked takes a device back at its termination time, whatever it
// is doing.
func (s *Simulator) reclaimLocked(d *device, at time.Time) {
	d.gen++
	d.reclaimed = true
	s.recordEventLocked(d, at, EventReclaimed, "success", "{{ device }} reached its termination time and is reclaimed")
	s.setStateLocked(d, metalv1.DEVICESTATE_DEPROVISIONING, at, EventDeprovisioning, "{{ device }} is being deprovisioned")
	s.afterLocked(d, at, s.timings.Deprovision, func(at time.Time) { s.removeDeviceLocked(d, at, false) })
}

// SetTerminationTime sets when the platform reclaims a device, as for a
// spot instance outbid or taken back (a termination notice is recorded at
// once, the reclaim happens at t); a zero t clears it.
func (s *Simulator) SetTerminationTime(deviceID string, t time.Time) error {
	var err error
	s.locked(func() {
		now := s.clock.Now()
		s.advanceLocked(now)
		d, ok := s.devices[deviceID]
		if !ok {
			err = fmt.Errorf("device %s: %w", deviceID, ErrNotFound)
			return
		}
		s.setTerminationLocked(d, t, now)
		// A time already past is acted on now rather than on the next
		// request.
		s.advanceLocked(now)
	})
	s.deliver()
	return err
}
