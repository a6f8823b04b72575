package bmc

import (
	"context"
	"time"
)

// Client talks to one BMC. Its methods may be called from several
// goroutines; calls to one BMC are serialised because BMCs handle few
// sessions and requests at a time.
type Client interface {
	// Inventory reads the hardware's facts. Fields the BMC does not report
	// stay empty (zero); nothing is guessed.
	Inventory(ctx context.Context) (Inventory, error)
	// Health reads the overall state and one state per Subsystem.
	Health(ctx context.Context) (Health, error)
	// LogEntries returns the system event log entries strictly after cursor
	// ("" = from the beginning), oldest first, and the cursor to pass next
	// time. See the package documentation for how clears and wraps are
	// handled.
	LogEntries(ctx context.Context, cursor string) (entries []LogEntry, next string, err error)
	// PowerState reads whether the host is powered.
	PowerState(ctx context.Context) (PowerState, error)
	// Power sends exactly one power command to the BMC. It never retries:
	// after an error the command may or may not have run, and the caller
	// decides, after reading PowerState, whether to ask again.
	Power(ctx context.Context, action PowerAction) error
	// BootOnce makes the host boot from dev, with firmware fw, on its next
	// power-on or restart only; later starts boot as before. Like Power it
	// sends one command and never retries it blindly (a Redfish BMC that
	// refuses the boot mode in the patch, 400, gets it once more without
	// the mode when the system is in that mode already). A BMC that cannot
	// do it is Unsupported, with a message saying what to change. It
	// returns the firmware the host was told to boot with (for
	// BootFirmwareAny over Redfish, the system's own mode), also when the
	// answer was lost; BootFirmwareAny when the BMC takes no boot mode (a
	// Redfish system without BootSourceOverrideMode boots as its firmware
	// is set). Power the host on (or cycle it) right after: IPMI BMCs
	// forget the override when no start follows within 60 seconds.
	BootOnce(ctx context.Context, dev BootDevice, fw BootFirmware) (BootFirmware, error)
	// Close logs out (Redfish session) or closes the IPMI session, waiting
	// briefly for the BMC; a BMC that does not confirm expires the session
	// by itself. Calls after Close fail with class Invalid.
	Close() error
}

// Inventory is what the BMC says about the hardware.
type Inventory struct {
	Manufacturer string
	Model        string
	SerialNumber string
	BIOSVersion  string
	// CPUCount is the number of processor packages (0 = not reported).
	CPUCount int
	CPUModel string
	// MemoryBytes is the installed system memory (0 = not reported).
	MemoryBytes int64
	Drives      []Drive
	NICs        []NIC
	// SystemUUID is the SMBIOS system UUID, lower case (Redfish
	// ComputerSystem UUID; IPMI Get System GUID read in SMBIOS byte order):
	// what the host's firmware and iPXE's ${uuid} report. Empty when the
	// BMC gives none, or only zeros.
	SystemUUID string
}

// Drive is one physical disk.
type Drive struct {
	Name string
	// SizeBytes is 0 when not reported.
	SizeBytes int64
	// MediaType is HDD, SSD or SMR as the BMC says, or empty.
	MediaType string
	// Protocol is SATA, SAS, NVMe, ... as the BMC says, or empty.
	Protocol string
}

// NIC is one host network interface.
type NIC struct {
	Name       string
	MACAddress string
	// SpeedMbps is 0 when not reported.
	SpeedMbps int
}

// State is a health state, worst last.
type State string

// States, from best to worst; Unknown ranks between OK and Warning because
// a part the BMC does not report is neither healthy nor failing.
const (
	StateOK       State = "OK"
	StateUnknown  State = "Unknown"
	StateWarning  State = "Warning"
	StateCritical State = "Critical"
)

func (s State) rank() int {
	switch s {
	case StateOK:
		return 0
	case StateWarning:
		return 2
	case StateCritical:
		return 3
	default:
		return 1
	}
}

// Worse returns the worse of two states.
func Worse(a, b State) State {
	if b.rank() > a.rank() {
		return b
	}
	return a
}

// Subsystem names a group of parts.
type Subsystem string

// Subsystems, in the order Health lists them.
const (
	SubsystemThermal       Subsystem = "Thermal"
	SubsystemPowerSupplies Subsystem = "PowerSupplies"
	SubsystemFans          Subsystem = "Fans"
	SubsystemStorage       Subsystem = "Storage"
	SubsystemMemory        Subsystem = "Memory"
	SubsystemProcessors    Subsystem = "Processors"
)

// Subsystems lists every subsystem in a fixed order.
var Subsystems = []Subsystem{SubsystemThermal, SubsystemPowerSupplies, SubsystemFans, SubsystemStorage, SubsystemMemory, SubsystemProcessors}

// SubsystemHealth is the state of one subsystem. Message names the failing
// parts ("PSU 2: Critical") and holds no readings, so two polls of an
// unchanged BMC compare equal and a controller emits an Event only on a
// real change.
type SubsystemHealth struct {
	Subsystem Subsystem
	State     State
	Message   string
	// Predicted counts the parts that predict their own failure (a
	// drive's SMART data, as Redfish Drive.FailurePredicted or an IPMI
	// drive slot's Predictive Failure state): each makes the subsystem a
	// Warning at least, and its message says so.
	Predicted int
}

// Health is one reading of the BMC's health.
type Health struct {
	Overall State
	// Subsystems has one entry per Subsystems element, in that order.
	Subsystems []SubsystemHealth
}

// Get returns the reading of one subsystem (Unknown when absent).
func (h Health) Get(s Subsystem) SubsystemHealth {
	for _, sh := range h.Subsystems {
		if sh.Subsystem == s {
			return sh
		}
	}
	return SubsystemHealth{Subsystem: s, State: StateUnknown, Message: notReported}
}

const notReported = "not reported by the BMC"

// LogEntry is one system event log record.
type LogEntry struct {
	// ID is the BMC's own identifier (Redfish Id, IPMI SEL record ID),
	// unique within its log.
	ID string
	// Log names the log the entry comes from: the Redfish log service's Id
	// (a BMC may have several), empty for the IPMI SEL.
	Log string
	// Time is zero when the BMC gave no usable time (for instance an IPMI
	// timestamp taken before the BMC's clock was set).
	Time     time.Time
	Severity State
	Message  string
}

// PowerState is whether the host is powered.
type PowerState string

// Power states. Transitional Redfish states (PoweringOn, PoweringOff,
// Paused) read as Unknown: the caller polls until the BMC settles.
const (
	PowerOn      PowerState = "on"
	PowerOff     PowerState = "off"
	PowerUnknown PowerState = "unknown"
)

// PowerAction is a power command.
type PowerAction string

// Power actions, as the Harvester power action names them.
const (
	// PowerActionOn powers the host on.
	PowerActionOn PowerAction = "on"
	// PowerActionOff cuts power at once (Redfish ForceOff, IPMI power down),
	// as Seeder's shutdown does: the node is in maintenance mode already.
	PowerActionOff PowerAction = "off"
	// PowerActionReboot power-cycles the host (Redfish PowerCycle, or
	// ForceRestart when the BMC lacks it; IPMI power cycle).
	PowerActionReboot PowerAction = "reboot"
)

func (a PowerAction) valid() bool {
	return a == PowerActionOn || a == PowerActionOff || a == PowerActionReboot
}
