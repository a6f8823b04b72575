package metaldriver

import (
	"strings"

	"github.com/harvester/harvester-equinix-addon/pkg/machine"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// Event types of the Metal log that the driver reads meaning from. The API's
// types were free strings; these follow its "<object>.<verb>" style as the
// simulator records them.
const (
	typePowerOff          = "instance.power_off"
	typePoweredOff        = "instance.powered_off"
	typePowerOn           = "instance.power_on"
	typePoweredOn         = "instance.powered_on"
	typeTerminationNotice = "instance.termination_scheduled"
	typeReclaimed         = "instance.reclaimed"
	typeMaintenance       = "maintenance.scheduled"
)

func isTerminationNotice(typ string) bool { return typ == typeTerminationNotice }

// fromEvent turns a Metal event into a machine event.
func fromEvent(e metal.Event) machine.Event {
	msg := e.Interpolated
	if msg == "" {
		msg = e.Body
	}
	ev := machine.Event{ID: e.ID, Time: e.CreatedAt, Type: e.Type, Message: msg, Severity: machine.SeverityNormal}
	switch e.Type {
	case typePowerOff:
		ev.Power = machine.PowerPoweringOff
	case typePoweredOff:
		ev.Power = machine.PowerOff
	case typePowerOn:
		ev.Power = machine.PowerPoweringOn
	case typePoweredOn:
		ev.Power = machine.PowerOn
	}
	state := strings.ToLower(e.State)
	if state == "failure" || state == "failed" || strings.Contains(e.Type, "fail") ||
		e.Type == typeTerminationNotice || e.Type == typeReclaimed || e.Type == typeMaintenance {
		ev.Severity = machine.SeverityWarning
	}
	return ev
}

// powerState maps a device state onto a power state.
func powerState(s metal.DeviceState) machine.PowerState {
	switch s {
	case metal.DeviceStateActive:
		return machine.PowerOn
	case metal.DeviceStateInactive:
		return machine.PowerOff
	case metal.DeviceStatePoweringOn:
		return machine.PowerPoweringOn
	case metal.DeviceStatePoweringOff:
		return machine.PowerPoweringOff
	}
	// Queued, provisioning, reinstalling, failed, deprovisioning: the
	// device is not a machine one can switch now.
	return machine.PowerUnknown
}

// fromError classifies a Metal error for the chain.
func fromError(op string, err error) error {
	if err == nil {
		return nil
	}
	return machine.FromSeam(op, err)
}
