package metalsim

import "time"

// Timings are the durations of the simulated asynchronous work. A zero
// duration makes that step complete on the next access, so the zero Timings
// value is an "instant" simulator; use DefaultTimings for realistic delays.
type Timings struct {
	// Queue is how long a new device stays queued before provisioning starts.
	Queue time.Duration
	// Provision is how long provisioning takes for a regular operating system.
	Provision time.Duration
	// IPXEBoot is how long a custom_ipxe device provisions before its iPXE
	// script is handed out; the device turns active at that moment, before
	// any OS has been written (Equinix custom iPXE documentation).
	IPXEBoot time.Duration
	// Reinstall is how long writing a regular OS takes during a reinstall;
	// custom_ipxe reinstalls use IPXEBoot instead.
	Reinstall time.Duration
	// DiskWipe is added to a reinstall unless both preserve_data and
	// deprovision_fast are set (equinix/metal-cli #233).
	DiskWipe time.Duration
	// Deprovision is how long a deleted device stays deprovisioning before
	// it disappears (GET answers 404).
	Deprovision time.Duration
	// Power covers powering_off, powering_on, reboot and rescue.
	Power time.Duration
	// PortConversion delays layer-2/layer-3 conversions. With zero the
	// response already shows the converted port; otherwise the API answers
	// with the unchanged port and the change lands later, as the real API
	// did (packngo #134, #203).
	PortConversion time.Duration
	// ReservationRelease is how long a hardware reservation stays
	// unprovisionable after its device is gone (about 4 minutes for real).
	ReservationRelease time.Duration
	// BGPEnable is how long a local BGP request stays "requested" before
	// it is "enabled"; global BGP stays requested (it needed a review).
	BGPEnable time.Duration
}

// DefaultTimings returns durations close to what the real service showed.
func DefaultTimings() Timings {
	return Timings{
		Queue:              30 * time.Second,
		Provision:          8 * time.Minute,
		IPXEBoot:           3 * time.Minute,
		Reinstall:          8 * time.Minute,
		DiskWipe:           5 * time.Minute,
		Deprovision:        2 * time.Minute,
		Power:              30 * time.Second,
		PortConversion:     10 * time.Second,
		ReservationRelease: 4 * time.Minute,
		BGPEnable:          time.Minute,
	}
}

// Scale returns t with every duration multiplied by f, so a standalone
// simulator on the real clock can run a day's worth of provisioning in
// minutes (f = 0.01) or instantly (f = 0). A negative f counts as 0.
func (t Timings) Scale(f float64) Timings {
	if f < 0 {
		f = 0
	}
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f) }
	return Timings{
		Queue:              scale(t.Queue),
		Provision:          scale(t.Provision),
		IPXEBoot:           scale(t.IPXEBoot),
		Reinstall:          scale(t.Reinstall),
		DiskWipe:           scale(t.DiskWipe),
		Deprovision:        scale(t.Deprovision),
		Power:              scale(t.Power),
		PortConversion:     scale(t.PortConversion),
		ReservationRelease: scale(t.ReservationRelease),
		BGPEnable:          scale(t.BGPEnable),
	}
}
