package metaldriver

import (
	"errors"
	"strings"

	"github.com/harvester/harvester-equinix-addon/pkg/hardware"
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
func fromEvent(e metal.Event) hardware.Event {
	msg := e.Interpolated
	if msg == "" {
		msg = e.Body
	}
	ev := hardware.Event{ID: e.ID, Time: e.CreatedAt, Type: e.Type, Message: msg, Severity: hardware.SeverityNormal}
	switch e.Type {
	case typePowerOff:
		ev.Power = hardware.PowerPoweringOff
	case typePoweredOff:
		ev.Power = hardware.PowerOff
	case typePowerOn:
		ev.Power = hardware.PowerPoweringOn
	case typePoweredOn:
		ev.Power = hardware.PowerOn
	}
	state := strings.ToLower(e.State)
	if state == "failure" || state == "failed" || strings.Contains(e.Type, "fail") ||
		e.Type == typeTerminationNotice || e.Type == typeReclaimed || e.Type == typeMaintenance {
		ev.Severity = hardware.SeverityWarning
	}
	return ev
}

// powerState maps a device state onto a power state.
func powerState(s metal.DeviceState) hardware.PowerState {
	switch s {
	case metal.DeviceStateActive:
		return hardware.PowerOn
	case metal.DeviceStateInactive:
		return hardware.PowerOff
	case metal.DeviceStatePoweringOn:
		return hardware.PowerPoweringOn
	case metal.DeviceStatePoweringOff:
		return hardware.PowerPoweringOff
	}
	// Queued, provisioning, reinstalling, failed, deprovisioning: the
	// device is not a machine one can switch now.
	return hardware.PowerUnknown
}

// fromError classifies a Metal error for the chain.
func fromError(op string, err error) error {
	if err == nil {
		return nil
	}
	var me *metal.Error
	msg := err.Error()
	if errors.As(err, &me) && me.Message != "" {
		msg = me.Message
	}
	out := &hardware.Error{Op: op, Message: msg, RetryAfter: metal.RetryAfter(err), Err: err}
	switch metal.ClassOf(err) {
	case metal.ClassNotFound:
		out.Class = hardware.ClassNotFound
	case metal.ClassUnauthorized, metal.ClassForbidden:
		out.Class = hardware.ClassUnauthorized
	case metal.ClassThrottled:
		out.Class = hardware.ClassThrottled
	case metal.ClassBusy:
		out.Class = hardware.ClassBusy
	case metal.ClassInvalid, metal.ClassNoCapacity:
		out.Class = hardware.ClassRefused
	case metal.ClassTransient:
		out.Class = hardware.ClassUnavailable
	default:
		out.Class = hardware.ClassUnknown
	}
	return out
}
