package bmcsim

import (
	"cmp"
	"fmt"
	"sync"
	"time"
)

// PartKind names a kind of hardware part whose health a test can set.
type PartKind string

// Part kinds, each rendered where the Redfish schema puts it.
const (
	PartProcessor   PartKind = "Processor"   // Systems/1/Processors
	PartMemory      PartKind = "Memory"      // Systems/1/Memory
	PartDrive       PartKind = "Drive"       // Systems/1/Storage/1/Drives
	PartTemperature PartKind = "Temperature" // Chassis/1/Thermal Temperatures
	PartFan         PartKind = "Fan"         // Chassis/1/Thermal Fans
	PartPowerSupply PartKind = "PowerSupply" // Chassis/1/Power PowerSupplies
)

// Health values of the Redfish Status object.
const (
	HealthOK       = "OK"
	HealthWarning  = "Warning"
	HealthCritical = "Critical"
)

// Part is one simulated component.
type Part struct {
	Kind   PartKind
	ID     string
	Name   string
	Health string
	// Absent parts render with Status.State "Absent" (an empty slot).
	Absent bool
	// Model is the processor or drive model, or the DIMM part number.
	Model string
	// SizeBytes is a drive's or DIMM's capacity.
	SizeBytes int64
	// MediaType (SSD/HDD) and Protocol (SATA/NVMe...) for drives.
	MediaType string
	Protocol  string
	// Cores for processors.
	Cores int
	// FailurePredicted is a drive's own prediction that it will fail (its
	// SMART data): BMCs report it beside Status.Health, which often stays
	// OK until the drive does fail.
	FailurePredicted bool
}

// NIC is one Ethernet interface of the host, as the system lists it.
type NIC struct {
	ID, MAC   string
	SpeedMbps int
	// Kind is a physical port ("") or one of the interfaces BMCs list beside
	// the ports: a VLAN on a port, or the host's side of the BMC's host
	// interface (a USB network link to the BMC).
	Kind NICKind
	// Parent is the port a VLAN runs on.
	Parent string
}

// NICKind says what an Ethernet interface is.
type NICKind string

// NIC kinds besides a physical port.
const (
	NICVLAN          NICKind = "VLAN"
	NICHostInterface NICKind = "HostInterface"
)

// Hardware is the simulated machine's fixed facts.
type Hardware struct {
	Manufacturer, Model, SerialNumber, BIOSVersion, UUID string
	Parts                                                []Part
	NICs                                                 []NIC
}

// DefaultHardware is a two-socket server with four DIMMs, two drives, three
// temperature sensors, four fans, two power supplies and two NICs.
func DefaultHardware() Hardware {
	gib := int64(1) << 30
	parts := []Part{
		{Kind: PartProcessor, ID: "CPU1", Name: "CPU 1", Model: "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", Cores: 32},
		{Kind: PartProcessor, ID: "CPU2", Name: "CPU 2", Model: "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", Cores: 32},
		{Kind: PartDrive, ID: "0", Name: "Disk 0", Model: "SAMSUNG MZ7L3480", SizeBytes: 480103981056, MediaType: "SSD", Protocol: "SATA"},
		{Kind: PartDrive, ID: "1", Name: "Disk 1", Model: "SAMSUNG MZQL23T8", SizeBytes: 3840755982336, MediaType: "SSD", Protocol: "NVMe"},
		{Kind: PartTemperature, ID: "0", Name: "CPU1 Temp"},
		{Kind: PartTemperature, ID: "1", Name: "CPU2 Temp"},
		{Kind: PartTemperature, ID: "2", Name: "Inlet Temp"},
		{Kind: PartPowerSupply, ID: "0", Name: "PSU 1"},
		{Kind: PartPowerSupply, ID: "1", Name: "PSU 2"},
	}
	for i := 1; i <= 4; i++ {
		parts = append(parts, Part{Kind: PartMemory, ID: fmt.Sprintf("DIMM%d", i), Name: fmt.Sprintf("DIMM A%d", i), Model: "M393A4K40EB3-CWE", SizeBytes: 32 * gib})
		parts = append(parts, Part{Kind: PartFan, ID: fmt.Sprint(i - 1), Name: fmt.Sprintf("Fan %d", i)})
	}
	for i := range parts {
		parts[i].Health = HealthOK
	}
	return Hardware{
		Manufacturer: "Supermicro", Model: "SYS-510P-M", SerialNumber: "S123456X1234567",
		BIOSVersion: "2.1", UUID: "4c4c4544-0051-3010-8052-b4c04f4d4e32",
		Parts: parts,
		NICs:  []NIC{{ID: "NIC1", MAC: "3c:ec:ef:00:00:01", SpeedMbps: 25000}, {ID: "NIC2", MAC: "3c:ec:ef:00:00:02", SpeedMbps: 25000}},
	}
}

// Options configure a BMC.
type Options struct {
	Username, Password string
	// Hardware defaults to DefaultHardware().
	Hardware *Hardware
	// PowerTransition is how long PoweringOn/PoweringOff last; 0 makes
	// every power change immediate.
	PowerTransition time.Duration
	// MaxLogEntries is the SEL size; older entries are overwritten when it
	// is full (OverWritePolicy WrapsWhenFull). 0 means 1000.
	MaxLogEntries int
	// LogPageSize is how many entries one page of the Entries collection
	// holds before Members@odata.nextLink; 0 means 50.
	LogPageSize int
	// NoSessionService leaves out the SessionService, as some older BMCs
	// do: clients must use HTTP basic auth.
	NoSessionService bool
	// LogServices are the BMC's log services; nil means
	// DefaultLogServices(). AddLogEntry and ClearLog act on the first.
	LogServices []LogService
	// SimpleStorageOnly describes the drives through SimpleStorage and
	// leaves out Storage, as older BMCs do.
	SimpleStorageOnly bool
	// MaxSessions refuses a login past that many open sessions with 503,
	// as iDRACs do; 0 means no limit.
	MaxSessions int
	// OtherSystems are IDs of further computer systems the BMC lists
	// beside the server's own Systems/1, as a multi-node chassis's BMC
	// does (an ID that sorts before "1", such as "0", makes a client that
	// takes the first system pick the wrong one).
	OtherSystems []string
	// Lockout locks the account after failed logins; nil never locks it.
	Lockout *Lockout
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// BootTargets are the boot override targets the system allows
	// (BootSourceOverrideTarget@Redfish.AllowableValues); nil means
	// DefaultBootTargets. A list without BootPxe is a system that cannot
	// be told to boot from the network.
	BootTargets []string
	// BootMode is the BootSourceOverrideMode the system reports, "UEFI"
	// or "Legacy"; empty means "UEFI". NoBootMode leaves the property out,
	// as systems of ComputerSystem before v1.1 do, and refuses it in a
	// PATCH.
	BootMode   string
	NoBootMode bool
	// BootModeReadOnly refuses, with 400, a PATCH that names
	// BootSourceOverrideMode at all, even with the value the system
	// reports, and applies nothing of it: HPE's iLO 5 and Dell's
	// 13th-generation iDRAC keep the boot mode a BIOS setting and answer
	// so (iLO with PropertyNotWritable, iDRAC with SYS410).
	BootModeReadOnly bool
	// BootModeResetWhenOmitted sets the mode back to a default, Legacy
	// here, on a PATCH of Boot that leaves BootSourceOverrideMode out, as
	// Supermicro BMCs do by design: a client that does not send the mode
	// can boot a UEFI server in legacy mode.
	BootModeResetWhenOmitted bool
	// ForgetBootOverride answers a PATCH of the boot override with 204
	// and keeps nothing: a BMC that takes a request it will not act on.
	ForgetBootOverride bool
	// VirtualMedia is where the BMC lists its virtual media (a CD/DVD
	// slot and a removable-disk one); VirtualMediaNone lists none.
	VirtualMedia VirtualMediaAt
	// VirtualMediaPatchOnly leaves out the InsertMedia and EjectMedia
	// actions: media are inserted and ejected by a PATCH of the slot's
	// Image and Inserted, as on Lenovo XCC and older Supermicro BMCs.
	VirtualMediaPatchOnly bool
	// VirtualMediaISOSuffix refuses a CD image whose URL's path does not
	// end in .iso, as iLO and some Supermicro firmware do.
	VirtualMediaISOSuffix bool
	// HTTPBoot gives the system's Boot the HttpBootUri property, which a
	// one-time UefiHttp boot fetches; without it the system, like BMCs
	// before ComputerSystem v1.9, cannot be told a URI.
	HTTPBoot bool
}

// BMC is the simulated Redfish service's state. All methods are safe for
// concurrent use.
type BMC struct {
	opts Options
	hw   Hardware

	mu          sync.Mutex
	power       string // On, Off, PoweringOn, PoweringOff
	powerTarget string
	powerAt     time.Time
	resets      []Reset
	otherResets []string
	sessions    map[string]string // id -> token
	nextSession int
	logins      loginStats
	logs        []*eventLog
	faults      []*faultState
	fired       map[FaultID]int
	nextFault   int
	requests    int
	requestLog  []string
	boot        BootOverride
	transitions []PowerTransition
	hooks       []func(PowerTransition)
	media       mediaSlots
	mediaHooks  []func(string, Media)
}

// New returns a powered-on BMC with healthy hardware and an empty SEL.
func New(opts Options) *BMC {
	hw := DefaultHardware()
	if opts.Hardware != nil {
		hw = *opts.Hardware
		hw.Parts = append([]Part(nil), hw.Parts...)
	}
	if opts.MaxLogEntries <= 0 {
		opts.MaxLogEntries = 1000
	}
	if opts.LogPageSize <= 0 {
		opts.LogPageSize = 50
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if len(opts.LogServices) == 0 {
		opts.LogServices = DefaultLogServices()
	}
	b := &BMC{opts: opts, hw: hw, power: "On", sessions: map[string]string{}, fired: map[FaultID]int{},
		logins: loginStats{spans: map[string]*sessionSpan{}}}
	b.boot = BootOverride{Target: BootNone, Enabled: BootDisabled, Mode: cmp.Or(opts.BootMode, "UEFI")}
	if opts.NoBootMode {
		b.boot.Mode = ""
	}
	if opts.VirtualMedia != VirtualMediaNone {
		b.media = mediaSlots{MediaSlotCD: {}, MediaSlotUSB: {}}
	}
	for _, spec := range opts.LogServices {
		b.logs = append(b.logs, &eventLog{spec: spec, nextID: 1})
	}
	return b
}

// SetHealth sets the Status.Health of one part, found by kind and Name.
func (b *BMC) SetHealth(kind PartKind, name, health string) error {
	switch health {
	case HealthOK, HealthWarning, HealthCritical:
	default:
		return fmt.Errorf("health %q is not OK, Warning or Critical", health)
	}
	return b.setPart(kind, name, func(p *Part) { p.Health = health })
}

// SetFailurePredicted sets a drive's FailurePredicted, found by Name.
func (b *BMC) SetFailurePredicted(name string, predicted bool) error {
	return b.setPart(PartDrive, name, func(p *Part) { p.FailurePredicted = predicted })
}

// setPart changes the part of kind named name with set.
func (b *BMC) setPart(kind PartKind, name string, set func(*Part)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.hw.Parts {
		if p := &b.hw.Parts[i]; p.Kind == kind && p.Name == name {
			set(p)
			return nil
		}
	}
	return fmt.Errorf("no %s named %q", kind, name)
}

// SetPowerState sets the power state at once ("On" or "Off"), as a person
// pressing the power button would, without counting a Reset. A start
// boots with the override, as any start does.
func (b *BMC) SetPowerState(state string) error {
	if state != "On" && state != "Off" {
		return fmt.Errorf("power state %q is not On or Off", state)
	}
	b.mu.Lock()
	cur := b.powerLocked()
	wasOn := cur == "On" || cur == "PoweringOn"
	b.power, b.powerTarget = state, ""
	var ts []PowerTransition
	switch {
	case state == "On" && !wasOn:
		ts = append(ts, b.transitionLocked(PowerChangeOn, "SetPowerState"))
	case state == "Off" && wasOn:
		ts = append(ts, b.transitionLocked(PowerChangeOff, "SetPowerState"))
	}
	b.mu.Unlock()
	b.notify(ts...)
	return nil
}

// PowerState returns the current Redfish PowerState.
func (b *BMC) PowerState() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.powerLocked()
}

// powerLocked settles a transition whose time has come.
func (b *BMC) powerLocked() string {
	if b.powerTarget != "" && !b.opts.Now().Before(b.powerAt) {
		b.power, b.powerTarget = b.powerTarget, ""
	}
	return b.power
}

// Reset is one Reset action the BMC accepted.
type Reset struct {
	Type string
	At   time.Time
}

// Resets returns the ResetType of every Reset action accepted, in order.
func (b *BMC) Resets() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.resets))
	for _, r := range b.resets {
		out = append(out, r.Type)
	}
	return out
}

// ResetLog returns every Reset action accepted, with when (on the wall
// clock, which the callers' watches use too), in order.
func (b *BMC) ResetLog() []Reset {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Reset(nil), b.resets...)
}

// Sessions returns how many login sessions are open.
func (b *BMC) Sessions() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.sessions)
}

// RequestLog returns every request that reached the handler, as "GET
// /redfish/v1/Systems/1", in order.
func (b *BMC) RequestLog() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.requestLog...)
}

// Requests returns how many HTTP requests reached the handler.
func (b *BMC) Requests() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.requests
}

func (b *BMC) partsLocked(kind PartKind) []Part {
	var out []Part
	for _, p := range b.hw.Parts {
		if p.Kind == kind {
			out = append(out, p)
		}
	}
	return out
}

// rollupLocked is the worst health of present parts of the given kinds.
func (b *BMC) rollupLocked(kinds ...PartKind) string {
	worst := HealthOK
	for _, p := range b.hw.Parts {
		for _, k := range kinds {
			if p.Kind == k && !p.Absent && rank(p.Health) > rank(worst) {
				worst = p.Health
			}
		}
	}
	return worst
}

func rank(h string) int {
	switch h {
	case HealthWarning:
		return 1
	case HealthCritical:
		return 2
	}
	return 0
}
