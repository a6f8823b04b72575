package ipmisim

import (
	"fmt"
	"strings"

	"github.com/bougou/go-ipmi/pkg/types"
)

// Sensor numbers of bmc.emu, one per health subsystem.
const (
	SensorCPUTemp uint8 = 1 // temperature, threshold
	SensorFan     uint8 = 2 // fan, threshold
	SensorPSU     uint8 = 3 // power supply, discrete
	SensorDrive   uint8 = 4 // drive slot, discrete
	SensorDIMM    uint8 = 5 // memory, discrete
	SensorCPU     uint8 = 6 // processor, discrete
)

type sensorDef struct {
	number    uint8
	typ       types.SensorType
	name      string
	threshold bool
}

var sensors = []sensorDef{
	{SensorCPUTemp, types.SensorTypeTemperature, "CPU1 Temp", true},
	{SensorFan, types.SensorTypeFan, "FAN1", true},
	{SensorPSU, types.SensorTypePowerSupply, "PSU1 Status", false},
	{SensorDrive, types.SensorTypeDriveSlot, "Drive 0", false},
	{SensorDIMM, types.SensorTypeMemory, "DIMM A1", false},
	{SensorCPU, types.SensorTypeProcessor, "CPU1 Status", false},
}

// inventoryEmu renders the FRU data and the SDRs as emulator commands.
// The bytes come from go-ipmi's packers rather than being written here by
// hand, so they follow the IPMI FRU and SDR layouts.
func inventoryEmu(opts Options) (string, error) {
	var b strings.Builder
	fru, err := types.PackFRU(types.FRUPackConfig{
		Chassis: &types.FRUPackChassis{Type: 0x17, Serial: opts.SerialNumber}, // rack mount chassis
		Board:   &types.FRUPackBoard{Mfg: opts.Manufacturer, Product: opts.Model + " board", Serial: "B" + opts.SerialNumber},
		Product: &types.FRUPackProduct{Manufacturer: opts.Manufacturer, Name: opts.Model, Serial: opts.SerialNumber, Version: "1.0"},
	})
	if err != nil {
		return "", fmt.Errorf("pack FRU: %w", err)
	}
	fmt.Fprintf(&b, "mc_add_fru_data 0x20 0 %d data%s\n", len(fru), hexBytes(fru))
	for i, s := range sensors {
		sdr := &types.SDRCompact{
			GeneratorID:    0x0020,
			SensorNumber:   types.SensorNumber(s.number),
			SensorEntityID: types.EntityID(0x07), // system board
			SensorInitialization: types.SensorInitialization{
				InitScanning: true, InitEvents: true, EventGenerationEnabled: true, SensorScanningEnabled: true,
			},
			SensorType:             s.typ,
			SensorEventReadingType: types.EventReadingTypeSensorSpecific,
			SensorUnit:             types.SensorUnit{AnalogDataFormat: types.SensorAnalogUnitFormat_NotAnalog},
			IDStringTypeLength:     types.TypeLength(0xC0 | byte(len(s.name))),
			IDStringBytes:          []byte(s.name),
		}
		if s.threshold {
			sdr.SensorEventReadingType = types.EventReadingTypeThreshold
			sdr.SensorUnit = types.SensorUnit{AnalogDataFormat: types.SensorAnalogUnitFormat_Unsigned, BaseUnit: unitFor(s.typ)}
		}
		fmt.Fprintf(&b, "main_sdr_add 0x20%s\n", hexBytes(sdr.Pack(uint16(i+1))))
	}
	return b.String(), nil
}

func unitFor(t types.SensorType) types.SensorUnitType {
	if t == types.SensorTypeFan {
		return types.SensorUnitType_RPM
	}
	return types.SensorUnitType_DegreesC
}

func hexBytes(bs []byte) string {
	var b strings.Builder
	for _, x := range bs {
		fmt.Fprintf(&b, " 0x%02x", x)
	}
	return b.String()
}
