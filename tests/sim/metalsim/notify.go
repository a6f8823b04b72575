package metalsim

import (
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
)

// NotificationType says what happened to a device.
type NotificationType string

const (
	// DeviceCreated means a create request was stored (state queued).
	DeviceCreated NotificationType = "DeviceCreated"
	// DeviceStateChanged means the device's state changed; see State and PreviousState.
	DeviceStateChanged NotificationType = "DeviceStateChanged"
	// DeviceBooted means the machine booted (provision, reinstall, reboot, power on,
	// rescue). Boot says whether iPXE ran, from which script and why. For a
	// custom_ipxe provision it comes together with the switch to active.
	DeviceBooted NotificationType = "DeviceBooted"
	// DevicePoweredOff means the machine is off (state inactive).
	DevicePoweredOff NotificationType = "DevicePoweredOff"
	// DeviceRebooting means a reboot or rescue took the machine down; the state
	// stays active and a DeviceBooted follows once it is back. Boot.Reason
	// says which.
	DeviceRebooting NotificationType = "DeviceRebooting"
	// DeviceNetworkChanged means ports, VLANs or addresses changed.
	DeviceNetworkChanged NotificationType = "DeviceNetworkChanged"
	// DeviceUpdated means the device was updated through PUT /devices/{id}.
	DeviceUpdated NotificationType = "DeviceUpdated"
	// DeviceDeleted means the device is gone, after deprovisioning or, with
	// OutOfBand set, because DeleteDeviceOutOfBand removed it.
	DeviceDeleted NotificationType = "DeviceDeleted"
)

// BootReason says why a device booted.
type BootReason string

// Boot reasons.
const (
	BootProvision BootReason = "provision"
	BootReinstall BootReason = "reinstall"
	BootReboot    BootReason = "reboot"
	BootPowerOn   BootReason = "power_on"
	BootRescue    BootReason = "rescue"
)

// Notification describes one device transition. It is a snapshot: later
// changes to the device do not show up in it.
type Notification struct {
	Type      NotificationType
	Time      time.Time
	DeviceID  string
	ProjectID string
	Hostname  string
	Tags      []string
	// State is the device state after the transition; PreviousState is set
	// for DeviceStateChanged.
	State         metalv1.DeviceState
	PreviousState metalv1.DeviceState
	// OutOfBand is set on a DeviceDeleted caused by DeleteDeviceOutOfBand.
	OutOfBand bool
	// Reclaimed is set on the notifications of a device the platform takes
	// back at its termination time (deprovisioning, then deleted).
	Reclaimed bool
	// Boot is set on DeviceBooted and, with the reason only, on
	// DeviceRebooting.
	Boot *Boot
	// Userdata is the device's userdata at the time of the transition.
	Userdata string
	Network  NetworkState
	// Device is the full API view (every nested object included).
	Device metalv1.Device
}

// Boot describes one boot of a device.
type Boot struct {
	Reason BootReason
	// PXE is true when this boot ran the custom iPXE script: the first boot
	// of a custom_ipxe device, a custom_ipxe reinstall, or any boot when
	// always_pxe is set.
	PXE bool
	// IPXEScriptURL is the script URL the device chain-loaded, if any.
	IPXEScriptURL string
	// ScriptFromUserdata is true when the iPXE script was the device's
	// userdata (starting with #!ipxe) rather than a URL; IPXEScript holds it.
	ScriptFromUserdata bool
	IPXEScript         string
	OperatingSystem    string
	AlwaysPXE          bool
	// PreserveData is set on reinstalls that kept the disks.
	PreserveData bool
}

// NetworkState is a device's network as a host would see it.
type NetworkState struct {
	// Type is the device-level network type derived from the ports as
	// packngo's GetNetworkType did (layer3, hybrid, hybrid-bonded,
	// layer2-bonded, layer2-individual).
	Type string
	// MACs maps physical port names (eth0, eth1, ...) to their MAC address.
	MACs      map[string]string
	Ports     []PortState
	Addresses []Address
}

// PortState is one port of a NetworkState.
type PortState struct {
	ID          string
	Name        string
	MAC         string // physical ports only
	Bond        string // bond name of a physical port
	Bonded      bool
	Layer2      bool // bond ports only
	NetworkType metalv1.PortNetworkType
	VLANs       []int32
	NativeVLAN  int32
}

// Address is one IP address assigned to a device.
type Address struct {
	ID         string
	Family     int
	Address    string
	Gateway    string
	Netmask    string
	Network    string
	CIDR       int
	Public     bool
	Management bool
}

// Subscribe registers fn for every Notification and returns a function that
// unregisters it. Notifications are delivered in order, outside the
// simulator's lock, by the goroutine whose request or Tick caused them (or
// one already delivering); fn may call back into the Simulator but should
// not block for long.
func (s *Simulator) Subscribe(fn func(Notification)) (unsubscribe func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subSeq++
	id := s.subSeq
	s.subs[id] = fn
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.subs, id)
	}
}

// notifyLocked queues a notification about d. Callers hold s.mu.
func (s *Simulator) notifyLocked(typ NotificationType, d *device, at time.Time, mutate func(*Notification)) {
	if len(s.subs) == 0 {
		return
	}
	n := Notification{
		Type:      typ,
		Time:      at,
		DeviceID:  d.id(),
		ProjectID: d.project.id,
		Hostname:  d.hostname(),
		Tags:      append([]string(nil), d.obj.Tags...),
		State:     d.state,
		Reclaimed: d.reclaimed,
		Userdata:  d.obj.GetUserdata(),
		Network:   s.networkStateLocked(d),
		Device:    s.notificationView(d, at),
	}
	if mutate != nil {
		mutate(&n)
	}
	s.pending = append(s.pending, n)
}

// deliver hands queued notifications to subscribers. Only one goroutine
// delivers at a time, which keeps the order; a goroutine that finds
// delivery in progress leaves its notifications to that goroutine, which
// re-checks the queue after letting go. That also lets subscribers call
// back into the Simulator without deadlocking.
func (s *Simulator) deliver() {
	for s.deliverPending() && s.hasPending() {
		// deliverPending did the work; go round while more came meanwhile.
		continue
	}
}

// deliverPending drains the queue if no other goroutine is delivering and
// reports whether it did.
func (s *Simulator) deliverPending() bool {
	if !s.delivering.TryLock() {
		return false
	}
	defer s.delivering.Unlock()
	for {
		batch, subs := s.takePending()
		if len(batch) == 0 {
			return true
		}
		for _, n := range batch {
			for _, fn := range subs {
				fn(n)
			}
		}
	}
}

func (s *Simulator) takePending() ([]Notification, []func(Notification)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	batch := s.pending
	s.pending = nil
	subs := make([]func(Notification), 0, len(s.subs))
	for _, id := range sortedKeys(s.subs) {
		subs = append(subs, s.subs[id])
	}
	return batch, subs
}

func (s *Simulator) hasPending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending) > 0
}
