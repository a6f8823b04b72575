package bmcsim

func (b *BMC) chassis() map[string]any {
	c := resource(chassisPath, "#Chassis.v1_23_0.Chassis", "Chassis.Chassis")
	c["Id"], c["Name"], c["ChassisType"] = "1", "Computer System Chassis", "RackMount"
	c["Manufacturer"], c["Model"], c["SerialNumber"] = b.hw.Manufacturer, b.hw.Model, b.hw.SerialNumber
	c["PowerState"] = b.powerLocked()
	c["Status"] = map[string]any{"State": "Enabled", "Health": HealthOK, "HealthRollup": b.rollupLocked(PartTemperature, PartFan, PartPowerSupply)}
	c["Thermal"], c["Power"] = link(chassisPath+"/Thermal"), link(chassisPath+"/Power")
	c["Links"] = map[string]any{"ComputerSystems": []any{link(systemPath)}, "ManagedBy": []any{link(managerPath)}}
	return c
}

// thermal renders the Thermal resource. Readings are fixed plausible
// values: clients are meant to judge health by Status, not by numbers.
func (b *BMC) thermal() map[string]any {
	t := resource(chassisPath+"/Thermal", "#Thermal.v1_7_0.Thermal", "Thermal.Thermal")
	t["Id"], t["Name"] = "Thermal", "Thermal"
	var temps, fans []any
	for _, p := range b.partsLocked(PartTemperature) {
		temps = append(temps, map[string]any{
			"@odata.id": chassisPath + "/Thermal#/Temperatures/" + p.ID, "MemberId": p.ID, "Name": p.Name,
			"ReadingCelsius": 45, "UpperThresholdNonCritical": 85, "UpperThresholdCritical": 95,
			"PhysicalContext": "CPU", "Status": status(p.Health, p.Absent),
		})
	}
	for _, p := range b.partsLocked(PartFan) {
		fans = append(fans, map[string]any{
			"@odata.id": chassisPath + "/Thermal#/Fans/" + p.ID, "MemberId": p.ID, "Name": p.Name,
			"Reading": 6000, "ReadingUnits": "RPM", "LowerThresholdCritical": 1000,
			"Status": status(p.Health, p.Absent),
		})
	}
	t["Temperatures"], t["Temperatures@odata.count"] = temps, len(temps)
	t["Fans"], t["Fans@odata.count"] = fans, len(fans)
	t["Status"] = map[string]any{"State": "Enabled", "Health": b.rollupLocked(PartTemperature, PartFan)}
	return t
}

func (b *BMC) powerResource() map[string]any {
	p := resource(chassisPath+"/Power", "#Power.v1_7_1.Power", "Power.Power")
	p["Id"], p["Name"] = "Power", "Power"
	var psus []any
	for _, part := range b.partsLocked(PartPowerSupply) {
		psus = append(psus, map[string]any{
			"@odata.id": chassisPath + "/Power#/PowerSupplies/" + part.ID, "MemberId": part.ID, "Name": part.Name,
			"PowerCapacityWatts": 800, "PowerSupplyType": "AC", "LineInputVoltage": 230,
			"Status": status(part.Health, part.Absent),
		})
	}
	p["PowerSupplies"], p["PowerSupplies@odata.count"] = psus, len(psus)
	// Every BMC reports the chassis power draw; clients (gofish among
	// them) expect the PowerControl array to be there.
	p["PowerControl"] = []any{map[string]any{
		"@odata.id": chassisPath + "/Power#/PowerControl/0", "MemberId": "0", "Name": "System Power Control",
		"PowerConsumedWatts": 310, "PowerCapacityWatts": 1600, "Status": status(HealthOK, false),
	}}
	p["PowerControl@odata.count"] = 1
	return p
}

func (b *BMC) manager() map[string]any {
	m := resource(managerPath, "#Manager.v1_19_0.Manager", "Manager.Manager")
	m["Id"], m["Name"], m["ManagerType"], m["FirmwareVersion"] = "1", "Manager", "BMC", "1.0.0"
	m["Status"] = status(HealthOK, false)
	m["LogServices"] = link(managerPath + "/LogServices")
	if b.opts.VirtualMedia == VirtualMediaOnManager {
		m["VirtualMedia"] = link(managerPath + "/VirtualMedia")
	}
	if len(b.hostInterfaces()) > 0 {
		m["HostInterfaces"] = link(managerPath + "/HostInterfaces")
	}
	m["Links"] = map[string]any{"ManagerForServers": []any{link(systemPath)}, "ManagerForChassis": []any{link(chassisPath)}}
	return m
}
