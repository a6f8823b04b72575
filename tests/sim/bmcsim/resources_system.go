package bmcsim

import (
	"net/http"
	"strings"
)

const (
	systemPath  = root + "/Systems/1"
	chassisPath = root + "/Chassis/1"
	managerPath = root + "/Managers/1"
)

// resourceTypes maps the collections of a system to their member kinds.
var memberCollections = map[string]struct {
	kind                        PartKind
	collType, collCtx, collName string
}{
	systemPath + "/Processors": {PartProcessor, "#ProcessorCollection.ProcessorCollection", "ProcessorCollection.ProcessorCollection", "Processors Collection"},
	systemPath + "/Memory":     {PartMemory, "#MemoryCollection.MemoryCollection", "MemoryCollection.MemoryCollection", "Memory Collection"},
}

// resource renders the resource at path, holding the lock for a
// consistent view.
func (b *BMC) resource(path string, r *http.Request) (map[string]any, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if id, ok := b.otherSystem(path); ok && path == root+"/Systems/"+id {
		return otherSystemResource(id), true
	}
	if body, ok := b.mediaResource(path); ok {
		return body, true
	}
	switch path {
	case root:
		return b.serviceRoot(), true
	case root + "/SessionService":
		s := resource(path, "#SessionService.v1_1_8.SessionService", "SessionService.SessionService")
		s["Id"], s["Name"], s["ServiceEnabled"], s["SessionTimeout"] = "SessionService", "Session Service", true, 1800
		s["Sessions"] = link(sessionsPath)
		return s, true
	case sessionsPath:
		var ids []string
		for id := range b.sessions {
			ids = append(ids, sessionsPath+"/"+id)
		}
		return collection(path, "#SessionCollection.SessionCollection", "SessionCollection.SessionCollection", "Session Collection", ids), true
	case root + "/Systems":
		return collection(path, "#ComputerSystemCollection.ComputerSystemCollection", "ComputerSystemCollection.ComputerSystemCollection", "Computer System Collection", b.systemPaths()), true
	case systemPath:
		return b.system(), true
	case systemPath + "/Storage":
		if b.opts.SimpleStorageOnly {
			return nil, false
		}
		return collection(path, "#StorageCollection.StorageCollection", "StorageCollection.StorageCollection", "Storage Collection", []string{systemPath + "/Storage/1"}), true
	case systemPath + "/Storage/1":
		if b.opts.SimpleStorageOnly {
			return nil, false
		}
		return b.storage(), true
	case systemPath + "/SimpleStorage":
		if !b.opts.SimpleStorageOnly {
			return nil, false
		}
		return collection(path, "#SimpleStorageCollection.SimpleStorageCollection", "SimpleStorageCollection.SimpleStorageCollection", "Simple Storage Collection", []string{systemPath + "/SimpleStorage/1"}), true
	case systemPath + "/SimpleStorage/1":
		if !b.opts.SimpleStorageOnly {
			return nil, false
		}
		return b.simpleStorage(), true
	case systemPath + "/LogServices":
		return collection(path, "#LogServiceCollection.LogServiceCollection", "LogServiceCollection.LogServiceCollection", "Log Service Collection", b.logServiceIDs(LogOfSystem)), true
	case systemPath + "/EthernetInterfaces":
		var ids []string
		for _, n := range b.hw.NICs {
			ids = append(ids, path+"/"+n.ID)
		}
		return collection(path, "#EthernetInterfaceCollection.EthernetInterfaceCollection", "EthernetInterfaceCollection.EthernetInterfaceCollection", "Ethernet Network Interface Collection", ids), true
	case root + "/Chassis":
		return collection(path, "#ChassisCollection.ChassisCollection", "ChassisCollection.ChassisCollection", "Chassis Collection", []string{chassisPath}), true
	case chassisPath:
		return b.chassis(), true
	case chassisPath + "/Thermal":
		return b.thermal(), true
	case chassisPath + "/Power":
		return b.powerResource(), true
	case root + "/Managers":
		return collection(path, "#ManagerCollection.ManagerCollection", "ManagerCollection.ManagerCollection", "Manager Collection", []string{managerPath}), true
	case managerPath:
		return b.manager(), true
	case managerPath + "/LogServices":
		return collection(path, "#LogServiceCollection.LogServiceCollection", "LogServiceCollection.LogServiceCollection", "Log Service Collection", b.logServiceIDs(LogOfManager)), true
	case managerPath + "/HostInterfaces":
		return collection(path, "#HostInterfaceCollection.HostInterfaceCollection", "HostInterfaceCollection.HostInterfaceCollection", "Host Interface Collection", b.hostInterfaces()), true
	case managerPath + "/HostInterfaces/1":
		if len(b.hostInterfaces()) == 0 {
			return nil, false
		}
		return b.hostInterface(), true
	}
	if body, ok := b.logResource(path, r); ok {
		return body, true
	}
	if c, ok := memberCollections[path]; ok {
		var ids []string
		for _, p := range b.partsLocked(c.kind) {
			ids = append(ids, path+"/"+p.ID)
		}
		return collection(path, c.collType, c.collCtx, c.collName, ids), true
	}
	dir, id := path[:strings.LastIndex(path, "/")], path[strings.LastIndex(path, "/")+1:]
	switch dir {
	case systemPath + "/Processors":
		return b.member(PartProcessor, id, b.processor)
	case systemPath + "/Memory":
		return b.member(PartMemory, id, b.dimm)
	case systemPath + "/Storage/1/Drives":
		return b.member(PartDrive, id, b.drive)
	case systemPath + "/EthernetInterfaces":
		for _, n := range b.hw.NICs {
			if n.ID == id {
				return b.nic(n), true
			}
		}
	case sessionsPath:
		if _, ok := b.sessions[id]; ok {
			return b.session(id, b.opts.Username), true
		}
	}
	return nil, false
}

func (b *BMC) member(kind PartKind, id string, render func(Part) map[string]any) (map[string]any, bool) {
	for _, p := range b.partsLocked(kind) {
		if p.ID == id {
			return render(p), true
		}
	}
	return nil, false
}

func (b *BMC) serviceRoot() map[string]any {
	s := resource(root, "#ServiceRoot.v1_11_0.ServiceRoot", "ServiceRoot.ServiceRoot")
	s["Id"], s["Name"], s["RedfishVersion"], s["UUID"] = "RootService", "Root Service", "1.15.0", b.hw.UUID
	s["Vendor"], s["Product"] = b.hw.Manufacturer, "harvester-equinix-addon BMC simulator"
	s["Systems"], s["Chassis"], s["Managers"] = link(root+"/Systems"), link(root+"/Chassis"), link(root+"/Managers")
	if !b.opts.NoSessionService {
		s["SessionService"] = link(root + "/SessionService")
		s["Links"] = map[string]any{"Sessions": link(sessionsPath)}
	}
	return s
}

func (b *BMC) system() map[string]any {
	s := resource(systemPath, "#ComputerSystem.v1_20_0.ComputerSystem", "ComputerSystem.ComputerSystem")
	s["Id"], s["Name"], s["SystemType"] = "1", "System", "Physical"
	s["Manufacturer"], s["Model"], s["SerialNumber"] = b.hw.Manufacturer, b.hw.Model, b.hw.SerialNumber
	s["BiosVersion"], s["UUID"], s["PowerState"] = b.hw.BIOSVersion, b.hw.UUID, b.powerLocked()
	s["Status"] = map[string]any{"State": "Enabled", "Health": HealthOK, "HealthRollup": b.rollupLocked(PartProcessor, PartMemory, PartDrive, PartTemperature, PartFan, PartPowerSupply)}
	cpus := b.partsLocked(PartProcessor)
	cpuModel, cores := "", 0
	for _, p := range cpus {
		cpuModel, cores = p.Model, cores+p.Cores
	}
	s["ProcessorSummary"] = map[string]any{"Count": len(cpus), "CoreCount": cores, "Model": cpuModel,
		"Status": map[string]any{"State": "Enabled", "Health": b.rollupLocked(PartProcessor), "HealthRollup": b.rollupLocked(PartProcessor)}}
	var mem int64
	for _, p := range b.partsLocked(PartMemory) {
		if !p.Absent {
			mem += p.SizeBytes
		}
	}
	s["MemorySummary"] = map[string]any{"TotalSystemMemoryGiB": float64(mem) / (1 << 30),
		"Status": map[string]any{"State": "Enabled", "Health": b.rollupLocked(PartMemory), "HealthRollup": b.rollupLocked(PartMemory)}}
	s["Processors"], s["Memory"] = link(systemPath+"/Processors"), link(systemPath+"/Memory")
	s["EthernetInterfaces"], s["LogServices"] = link(systemPath+"/EthernetInterfaces"), link(systemPath+"/LogServices")
	if b.opts.SimpleStorageOnly {
		s["SimpleStorage"] = link(systemPath + "/SimpleStorage")
	} else {
		s["Storage"] = link(systemPath + "/Storage")
	}
	s["Links"] = map[string]any{"Chassis": []any{link(chassisPath)}, "ManagedBy": []any{link(managerPath)}}
	s["Boot"] = b.bootResource()
	if b.opts.VirtualMedia == VirtualMediaOnSystem {
		s["VirtualMedia"] = link(systemPath + "/VirtualMedia")
	}
	s["Actions"] = map[string]any{"#ComputerSystem.Reset": map[string]any{
		"target":                            systemPath + "/Actions/ComputerSystem.Reset",
		"ResetType@Redfish.AllowableValues": resetTypes,
	}}
	return s
}

func (b *BMC) processor(p Part) map[string]any {
	r := resource(systemPath+"/Processors/"+p.ID, "#Processor.v1_18_0.Processor", "Processor.Processor")
	r["Id"], r["Name"], r["Socket"], r["ProcessorType"] = p.ID, p.Name, p.ID, "CPU"
	r["Status"] = status(p.Health, p.Absent)
	if !p.Absent {
		r["Model"], r["TotalCores"], r["ProcessorArchitecture"], r["InstructionSet"] = p.Model, p.Cores, "x86", "x86-64"
	}
	return r
}

func (b *BMC) dimm(p Part) map[string]any {
	r := resource(systemPath+"/Memory/"+p.ID, "#Memory.v1_17_0.Memory", "Memory.Memory")
	r["Id"], r["Name"], r["DeviceLocator"] = p.ID, p.Name, p.Name
	r["Status"] = status(p.Health, p.Absent)
	if !p.Absent {
		r["CapacityMiB"], r["PartNumber"], r["MemoryDeviceType"] = p.SizeBytes>>20, p.Model, "DDR4"
	}
	return r
}

func (b *BMC) storage() map[string]any {
	var drives []any
	for _, p := range b.partsLocked(PartDrive) {
		drives = append(drives, link(systemPath+"/Storage/1/Drives/"+p.ID))
	}
	s := resource(systemPath+"/Storage/1", "#Storage.v1_15_0.Storage", "Storage.Storage")
	s["Id"], s["Name"], s["Drives"], s["Drives@odata.count"] = "1", "Storage Controller", drives, len(drives)
	s["Status"] = map[string]any{"State": "Enabled", "Health": HealthOK, "HealthRollup": b.rollupLocked(PartDrive)}
	return s
}

func (b *BMC) drive(p Part) map[string]any {
	r := resource(systemPath+"/Storage/1/Drives/"+p.ID, "#Drive.v1_17_0.Drive", "Drive.Drive")
	r["Id"], r["Name"], r["Status"] = p.ID, p.Name, status(p.Health, p.Absent)
	if !p.Absent {
		r["Model"], r["CapacityBytes"], r["MediaType"], r["Protocol"] = p.Model, p.SizeBytes, p.MediaType, p.Protocol
		r["FailurePredicted"] = p.FailurePredicted
	}
	return r
}

// nic renders an interface as DMTF's public-rackmount1 mockup does: a port
// typed Physical, a VLAN typed Virtual that relates to its port and carries
// the port's MAC, and the host interface's end with no type but a link to
// the manager's HostInterface.
func (b *BMC) nic(n NIC) map[string]any {
	r := resource(systemPath+"/EthernetInterfaces/"+n.ID, "#EthernetInterface.v1_9_0.EthernetInterface", "EthernetInterface.EthernetInterface")
	r["Id"], r["Name"], r["MACAddress"], r["PermanentMACAddress"] = n.ID, n.ID, n.MAC, n.MAC
	r["SpeedMbps"], r["LinkStatus"], r["Status"] = n.SpeedMbps, "LinkUp", status(HealthOK, false)
	switch n.Kind {
	case NICVLAN:
		r["Name"], r["EthernetInterfaceType"] = "VLAN of "+n.Parent, "Virtual"
		r["VLAN"] = map[string]any{"VLANEnable": true, "VLANId": 1000}
		r["Links"] = map[string]any{"RelatedInterfaces": []any{link(systemPath + "/EthernetInterfaces/" + n.Parent)}}
	case NICHostInterface:
		r["Name"] = "Host Ethernet Interface"
		r["Links"] = map[string]any{"HostInterface": link(managerPath + "/HostInterfaces/1")}
	default:
		r["EthernetInterfaceType"] = "Physical"
		r["VLAN"] = map[string]any{"VLANEnable": false, "VLANId": 101}
	}
	return r
}

// hostInterfaces lists the manager's host interface when a NIC is its end.
func (b *BMC) hostInterfaces() []string {
	for _, n := range b.hw.NICs {
		if n.Kind == NICHostInterface {
			return []string{managerPath + "/HostInterfaces/1"}
		}
	}
	return nil
}

func (b *BMC) hostInterface() map[string]any {
	h := resource(managerPath+"/HostInterfaces/1", "#HostInterface.v1_3_0.HostInterface", "HostInterface.HostInterface")
	h["Id"], h["Name"], h["HostInterfaceType"], h["InterfaceEnabled"] = "1", "Managed Host Interface", "NetworkHostInterface", true
	h["Status"] = status(HealthOK, false)
	return h
}

// simpleStorage renders the drives as SimpleStorage devices, the only
// storage resource of older BMCs.
func (b *BMC) simpleStorage() map[string]any {
	s := resource(systemPath+"/SimpleStorage/1", "#SimpleStorage.v1_3_0.SimpleStorage", "SimpleStorage.SimpleStorage")
	s["Id"], s["Name"], s["Description"] = "1", "Simple Storage Controller", "System SATA"
	devices := []any{}
	for _, p := range b.partsLocked(PartDrive) {
		d := map[string]any{"Name": p.Name, "Status": status(p.Health, p.Absent)}
		if !p.Absent {
			d["Manufacturer"], d["Model"], d["CapacityBytes"] = "Contoso", p.Model, p.SizeBytes
		}
		devices = append(devices, d)
	}
	s["Devices"] = devices
	s["Status"] = map[string]any{"State": "Enabled", "Health": HealthOK, "HealthRollup": b.rollupLocked(PartDrive)}
	return s
}
