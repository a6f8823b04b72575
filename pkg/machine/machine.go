package machine

import (
	"context"
	"time"
)

// Machine is one server's management controller as the hardware chain sees
// it. Implementations are safe for concurrent use; every error is a
// *failure.Error of Seam (see failure.ClassOf).
type Machine interface {
	// Facts reads what the machine is. A fact the management controller
	// does not report is left empty: nothing is made up.
	Facts(ctx context.Context) (Facts, error)
	// Events returns the machine's events after cursor, oldest first; an
	// empty cursor asks for every event the driver still has. Each event
	// carries the cursor to store once it, and every event before it, has
	// been forwarded, so that none is forwarded twice.
	Events(ctx context.Context, cursor string) (EventBatch, error)
	// PowerState reads the machine's power now.
	PowerState(ctx context.Context) (PowerState, error)
	// Power asks for one power action and returns once the management
	// controller took it or refused it. It sends exactly one request: on an
	// error for which MaybeApplied is true, the action may have been carried
	// out although no answer said so, and must not simply be sent again.
	Power(ctx context.Context, action PowerAction) error
}

// PowerState is a machine's power.
type PowerState string

// Power states.
const (
	PowerOn          PowerState = "on"
	PowerOff         PowerState = "off"
	PowerPoweringOn  PowerState = "powering-on"
	PowerPoweringOff PowerState = "powering-off"
	PowerUnknown     PowerState = "unknown"
)

// PowerAction is one power request.
type PowerAction string

// Power actions: switch on, switch off (hard), reboot.
const (
	ActionOn     PowerAction = "on"
	ActionOff    PowerAction = "off"
	ActionReboot PowerAction = "reboot"
)

// Facts is what a machine is.
type Facts struct {
	// Manufacturer, Model and SerialNumber are the machine's own, as its
	// management controller names them; empty when it does not.
	Manufacturer string
	Model        string
	SerialNumber string
	// BIOSVersion is empty when unknown.
	BIOSVersion string
	// SystemUUID is the machine's SMBIOS UUID, lower case, as its firmware
	// (and iPXE's ${uuid}) reports it; empty when unknown.
	SystemUUID string
	CPUs       []Component
	// Memory is the total memory as the controller states it (e.g. "64GB").
	Memory string
	Drives []Drive
	NICs   []Component
	// MACs are the NICs' MACs by NIC name, as the BMC reports them; nil
	// when it reports none.
	MACs map[string]string
	// TerminationTime is when the machine's provider takes it back (a spot
	// server outbid, a termination time set on it); zero when never.
	TerminationTime time.Time
	// Source says where the facts come from, for people (e.g. "Equinix
	// Metal plan c3.small.x86").
	Source string
}

// Component is a number of identical CPUs or NICs.
type Component struct {
	Count int
	Type  string
}

// Drive is a number of identical drives.
type Drive struct {
	Count    int
	Size     string
	Type     string
	Category string
}

// Severity says whether an event needs a person's attention.
type Severity string

// Severities, as Kubernetes Event types.
const (
	SeverityNormal  Severity = "Normal"
	SeverityWarning Severity = "Warning"
)

// Event is one entry of a machine's event log.
type Event struct {
	// ID is the driver's identifier of the event, unique for the machine
	// and stable across calls and restarts.
	ID string
	// Time is when the event happened, on the management controller's clock.
	Time time.Time
	// Type is the provider's kind of event (e.g. "instance.power_off").
	Type string
	// Message is the event's text for people.
	Message  string
	Severity Severity
	// Power is the power state the event reports the machine in, or "".
	Power PowerState
	// Cursor is what to pass as the cursor once this event and every one
	// before it have been forwarded.
	Cursor string
}

// EventBatch is what Events returns.
type EventBatch struct {
	Events []Event
	// RecheckAfter is when to ask again; zero when the driver wakes the
	// machine's owner itself once it has news.
	RecheckAfter time.Duration
}
