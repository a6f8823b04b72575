package bmcsim

import (
	"net/http"
	"strconv"
	"time"
)

func itoa(i int) string { return strconv.Itoa(i) }

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
	m["Links"] = map[string]any{"ManagerForServers": []any{link(systemPath)}, "ManagerForChassis": []any{link(chassisPath)}}
	return m
}

func (b *BMC) logService() map[string]any {
	l := resource(selPath, "#LogService.v1_5_0.LogService", "LogService.LogService")
	l["Id"], l["Name"], l["LogEntryType"], l["ServiceEnabled"] = "SEL", "System Event Log", "SEL", true
	l["MaxNumberOfRecords"], l["OverWritePolicy"] = b.opts.MaxLogEntries, "WrapsWhenFull"
	l["DateTime"] = b.opts.Now().UTC().Format(time.RFC3339)
	l["Entries"] = link(selPath + "/Entries")
	l["Actions"] = map[string]any{"#LogService.ClearLog": map[string]any{"target": selPath + "/Actions/LogService.ClearLog"}}
	l["Status"] = status(HealthOK, false)
	return l
}

// logEntries renders one page of the SEL, oldest first, with the members
// expanded as most BMCs do, and a nextLink to the following page.
func (b *BMC) logEntries(r *http.Request) map[string]any {
	skip, _ := strconv.Atoi(r.URL.Query().Get("$skip"))
	skip = max(0, min(skip, len(b.log)))
	end := min(skip+b.opts.LogPageSize, len(b.log))
	c := resource(selPath+"/Entries", "#LogEntryCollection.LogEntryCollection", "LogEntryCollection.LogEntryCollection")
	members := []any{}
	for _, e := range b.log[skip:end] {
		members = append(members, b.entry(e))
	}
	c["Name"], c["Members"], c["Members@odata.count"] = "System Event Log Entries", members, len(b.log)
	if end < len(b.log) {
		c["Members@odata.nextLink"] = selPath + "/Entries?$skip=" + itoa(end)
	}
	return c
}

func (b *BMC) entry(e logEntry) map[string]any {
	r := resource(selPath+"/Entries/"+itoa(e.ID), "#LogEntry.v1_15_0.LogEntry", "LogEntry.LogEntry")
	r["Id"], r["Name"], r["EntryType"] = itoa(e.ID), "Log Entry "+itoa(e.ID), "SEL"
	r["Created"], r["Severity"], r["Message"] = e.Created.Format(time.RFC3339), e.Severity, e.Message
	return r
}
