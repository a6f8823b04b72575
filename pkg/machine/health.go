package machine

import "time"

// HealthState is a part's or a subsystem's health, best first.
type HealthState string

// Health states; Unknown is a part the management controller does not
// report, neither healthy nor failing.
const (
	HealthOK       HealthState = "OK"
	HealthUnknown  HealthState = "Unknown"
	HealthWarning  HealthState = "Warning"
	HealthCritical HealthState = "Critical"
)

// SubsystemHealth is one group of parts (Thermal, Fans, Storage, ...).
type SubsystemHealth struct {
	// Subsystem names the group, in the management controller's seam's
	// words (a fixed, short set).
	Subsystem string
	State     HealthState
	// Message names the parts that are not OK, without readings.
	Message string
	// Predicted counts the parts that predict their own failure.
	Predicted int
}

// Health is one reading of a machine's health, one entry per subsystem
// in a fixed order.
type Health struct {
	Subsystems []SubsystemHealth
	// At is when the poll read it.
	At time.Time
}

// Link is what one pass learnt of the way to the management controller.
type Link struct {
	// Tried is false when the pass did not talk to it (nothing was due):
	// the other fields then say nothing.
	Tried bool
	// Reachable: it answered, even if only to refuse the credentials.
	Reachable bool
	// Authenticated: it took the credentials.
	Authenticated bool
	// Problem is the pass's first failure to reach, log in to or read it.
	Problem error
}

// HealthReporter is a Machine that reads its health while it polls (a
// BMC); one whose provider reports no health (Equinix Metal) is not.
type HealthReporter interface {
	// PolledHealth is what the pass's poll read; ok is false when the pass
	// made no poll (none was due, or it failed).
	PolledHealth() (h Health, ok bool)
	// Link is what the pass learnt of the way to the machine.
	Link() Link
	// Schedule is when the machine was last polled in full (zero when
	// never) and how often it is to be.
	Schedule() (last time.Time, interval time.Duration)
	// OnForget has f run once the driver forgets the machine's owner
	// (its object went); a later call replaces f.
	OnForget(f func())
}
