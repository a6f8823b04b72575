package metal

import "time"

// Plan is a hardware plan.
type Plan struct {
	ID     string
	Slug   string
	Name   string
	Class  string
	Type   string
	Line   string
	Legacy bool
	CPUs   []PlanComponent
	Memory string
	Drives []PlanDrive
	NICs   []PlanComponent
	UEFI   bool
	RAID   bool
}

func (p Plan) deepCopy() Plan {
	p.CPUs = append([]PlanComponent(nil), p.CPUs...)
	p.Drives = append([]PlanDrive(nil), p.Drives...)
	p.NICs = append([]PlanComponent(nil), p.NICs...)
	return p
}

// PlanComponent is a count of CPUs or NICs of one type.
type PlanComponent struct {
	Count int
	Type  string
}

// PlanDrive is a count of drives of one kind.
type PlanDrive struct {
	Count    int
	Type     string
	Size     string
	Category string
}

// HardwareReservation is a reserved server of the project: create a device
// on it with CreateDeviceRequest.HardwareReservationID (its ID, or
// "next-available" for any provisionable one of the plan in the metro).
type HardwareReservation struct {
	ID      string
	ShortID string
	// Plan is the plan slug; PlanDetails carries its specs when the answer
	// had the plan in full.
	Plan        string
	PlanDetails *Plan
	// Facility and Metro are lowercase codes (da11, da).
	Facility string
	Metro    string
	// Provisionable says whether a device can be created on it now: not in
	// use, not a spare, and not within the minutes after its last device
	// went away.
	Provisionable bool
	// Spare reservations stand by for broken ones; NeedOfService ones wait
	// for repair. Neither can be provisioned.
	Spare         bool
	NeedOfService bool
	// SwitchUUID tells which reserved servers share a top-of-rack switch.
	SwitchUUID string
	// DeviceID is the device on it, or "".
	DeviceID  string
	CreatedAt time.Time
}

// SpotPrice is the current spot market price of a plan in a metro, in US
// dollars per hour.
type SpotPrice struct {
	Metro string
	Plan  string
	Price float64
}
