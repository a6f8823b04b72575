package bmc

import (
	"context"
	"fmt"
	"slices"
	"strings"

	ipmi "github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/types"
)

// Inventory reads FRU 0 (product area first, then board and chassis), the
// system firmware version and the system GUID. IPMI has no standard way to list CPUs,
// memory, drives or host NICs, so those stay empty.
func (c *ipmiClient) Inventory(ctx context.Context) (Inventory, error) {
	var inv Inventory
	err := c.do(ctx, "Inventory", func(cl *ipmi.Client) error {
		fru, err := cl.GetFRU(ctx, 0, "")
		if err != nil && !isCompletionCode(err) {
			return err
		}
		if err == nil && fru.Present() {
			inv.Manufacturer, inv.Model, inv.SerialNumber = fruFacts(fru)
		}
		info, err := cl.GetSystemInfo(ctx)
		if err != nil && !isCompletionCode(err) {
			return err
		}
		if err == nil {
			inv.BIOSVersion = clean(info.SystemFirmwareVersion)
		}
		inv.SystemUUID, err = systemUUID(ctx, cl)
		return err
	})
	return inv, err
}

// systemUUID reads Get System GUID in SMBIOS byte order (the first three
// fields little endian), the order BMCs copy from the host's SMBIOS table:
// read so, it is the UUID the host's firmware reports.
func systemUUID(ctx context.Context, cl *ipmi.Client) (string, error) {
	g, err := cl.GetSystemGUID(ctx)
	if isCompletionCode(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	u, err := types.ParseGUID(g.GUID[:], types.GUIDModeSMBIOS)
	if err != nil {
		return "", nil //nolint:nilerr // 16 bytes always parse; a BMC's odd GUID is just no identity
	}
	return canonicalUUID(u.String()), nil
}

// isCompletionCode says the BMC answered but refused the command: for an
// optional fact that means "not available", not a failure.
func isCompletionCode(err error) bool {
	_, ok := types.IsResponseError(err)
	return ok
}

func fruFacts(fru *types.FRU) (manufacturer, model, serial string) {
	if p := fru.ProductInfoArea; p != nil {
		manufacturer = types.FRUFieldString(p.ManufacturerTypeLength, p.Manufacturer)
		model = types.FRUFieldString(p.NameTypeLength, p.Name)
		serial = types.FRUFieldString(p.SerialNumberTypeLength, p.SerialNumber)
	}
	if b := fru.BoardInfoArea; b != nil {
		manufacturer = cmpOr(clean(manufacturer), types.FRUFieldString(b.ManufacturerTypeLength, b.Manufacturer))
		model = cmpOr(clean(model), types.FRUFieldString(b.ProductNameTypeLength, b.ProductName))
		serial = cmpOr(clean(serial), types.FRUFieldString(b.SerialNumberTypeLength, b.SerialNumber))
	}
	if ch := fru.ChassisInfoArea; ch != nil {
		serial = cmpOr(clean(serial), types.FRUFieldString(ch.SerialNumberTypeLength, ch.SerialNumber))
	}
	return clean(manufacturer), clean(model), clean(serial)
}

// clean trims the padding FRU fields carry (spaces, NULs).
func clean(s string) string { return strings.Trim(s, " \x00\t") }

// sensorSubsystem maps IPMI sensor types to subsystems.
var sensorSubsystem = map[types.SensorType]Subsystem{
	types.SensorTypeTemperature: SubsystemThermal,
	types.SensorTypeFan:         SubsystemFans,
	types.SensorTypePowerSupply: SubsystemPowerSupplies,
	types.SensorTypeDriveSlot:   SubsystemStorage,
	types.SensorTypeMemory:      SubsystemMemory,
	types.SensorTypeProcessor:   SubsystemProcessors,
}

// discreteFaults lists, per sensor type, the sensor-specific offsets that
// mean a fault, and how bad. Offsets that only report presence or a normal
// state are left out.
var discreteFaults = map[types.SensorType]map[uint8]State{
	types.SensorTypeProcessor:   {0: StateCritical, 1: StateCritical, 2: StateCritical, 3: StateCritical, 4: StateCritical, 5: StateCritical, 6: StateCritical, 8: StateWarning, 10: StateWarning, 11: StateCritical, 12: StateWarning},
	types.SensorTypePowerSupply: {1: StateCritical, 2: StateWarning, 3: StateCritical, 4: StateCritical, 5: StateWarning, 6: StateCritical},
	types.SensorTypeMemory:      {0: StateWarning, 1: StateCritical, 2: StateCritical, 3: StateCritical, 4: StateWarning, 5: StateWarning, 7: StateCritical, 9: StateWarning, 10: StateCritical},
	types.SensorTypeDriveSlot:   {1: StateCritical, 2: StateWarning, 5: StateCritical, 6: StateCritical, 7: StateWarning, 8: StateCritical},
}

// Health reads every sensor of the SDR repository and the chassis status
// fault bits. A subsystem without a readable sensor is Unknown unless the
// chassis status reports a fault for it.
func (c *ipmiClient) Health(ctx context.Context) (Health, error) {
	var h Health
	err := c.do(ctx, "Health", func(cl *ipmi.Client) error {
		st, err := c.chassisStatus(ctx, cl)
		if err != nil {
			return err
		}
		sensors, err := sensors(ctx, cl)
		if err != nil && !isCompletionCode(err) {
			// An empty SDR repository answers "record not found": no sensors.
			return err
		}
		parts := map[Subsystem][]partState{}
		for _, s := range sensors {
			sub, ok := sensorSubsystem[s.SensorType]
			if !ok || s.NotPresent || s.ScanningDisabled || !s.IsReadingValid() {
				continue
			}
			parts[sub] = append(parts[sub], partState{name: cmpOr(s.Name, fmt.Sprintf("sensor %#02x", s.Number)), state: sensorState(s), predicted: predictsFailure(s)})
		}
		chassisFault := map[Subsystem]bool{
			SubsystemPowerSupplies: st.PowerFault || st.PowerOverload || st.PowerControlFault,
			SubsystemFans:          st.CollingFanFault,
			SubsystemStorage:       st.DriveFault,
		}
		h = Health{}
		for _, sub := range Subsystems {
			if chassisFault[sub] {
				parts[sub] = append(parts[sub], partState{name: "chassis status", state: StateCritical})
			}
			h.Subsystems = append(h.Subsystems, foldParts(sub, parts[sub]))
		}
		h.Overall = worstOf(StateUnknown, h.Subsystems)
		return nil
	})
	return h, err
}

type partState struct {
	name      string
	state     State
	predicted bool
}

// drivePredictiveFailure is the drive slot sensor's offset for a drive
// that predicts its own failure (SMART): it still works.
const drivePredictiveFailure = 2

// predictsFailure says whether a sensor reports a part that predicts its
// own failure.
func predictsFailure(s *types.Sensor) bool {
	if s.IsThreshold() || s.SensorType != types.SensorTypeDriveSlot {
		return false
	}
	return slices.Contains(s.Discrete.ActiveStates.TrueEvents(), drivePredictiveFailure)
}

// sensorState judges one sensor: thresholds for analog sensors (non-
// critical is a Warning, critical and non-recoverable are Critical), the
// fault offsets for discrete ones.
func sensorState(s *types.Sensor) State {
	if s.IsThreshold() {
		switch s.Threshold.ThresholdStatus {
		case types.SensorThresholdStatus_OK, "":
			return StateOK
		case types.SensorThresholdStatus_LNC, types.SensorThresholdStatus_UNC:
			return StateWarning
		default:
			return StateCritical
		}
	}
	state := StateOK
	for _, offset := range s.Discrete.ActiveStates.TrueEvents() {
		if bad, ok := discreteFaults[s.SensorType][offset]; ok {
			state = Worse(state, bad)
		}
	}
	return state
}

func foldParts(sub Subsystem, parts []partState) SubsystemHealth {
	if len(parts) == 0 {
		return SubsystemHealth{Subsystem: sub, State: StateUnknown, Message: notReported}
	}
	slices.SortFunc(parts, func(a, b partState) int { return strings.Compare(a.name, b.name) })
	out := SubsystemHealth{Subsystem: sub, State: StateOK}
	var bad []string
	for _, p := range parts {
		out.State = Worse(out.State, p.state)
		if p.predicted {
			out.Predicted++
		}
		if p.state != StateOK {
			bad = append(bad, partMessage(p.name, p.state, p.predicted))
		}
	}
	out.Message = fmt.Sprintf("%d of %d OK", len(parts), len(parts))
	if len(bad) > 0 {
		out.Message = strings.Join(bad, "; ")
	}
	return out
}
