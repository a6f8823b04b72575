package bmc

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"
)

// Inventory reads the system, then its processors, memory, drives and NICs
// where the summary lacks a fact. Collections the BMC does not have (no
// link, or 404) leave their fields empty.
func (c *redfishClient) Inventory(ctx context.Context) (Inventory, error) {
	var inv Inventory
	err := c.do(ctx, "Inventory", func(api *gofish.APIClient) error {
		sys, err := c.system(api)
		if err != nil {
			return err
		}
		inv = Inventory{Manufacturer: sys.Manufacturer, Model: sys.Model, SerialNumber: sys.SerialNumber, BIOSVersion: sys.BiosVersion,
			SystemUUID: canonicalUUID(sys.UUID)}
		if inv.Manufacturer == "" || inv.Model == "" || inv.SerialNumber == "" {
			// Seeder reads these from the chassis; some BMCs fill only that.
			if err := fillFromChassis(sys, &inv); err != nil {
				return err
			}
		}
		inv.CPUCount, inv.CPUModel = int(deref(sys.ProcessorSummary.Count)), sys.ProcessorSummary.Model //nolint:gosec // G115: a server's CPU count fits an int
		if gib := deref(sys.MemorySummary.TotalSystemMemoryGiB); gib > 0 {
			inv.MemoryBytes = int64(math.Round(gib * (1 << 30)))
		}
		if err := fillProcessorsAndMemory(sys, &inv); err != nil {
			return err
		}
		if inv.Drives, err = drives(sys); err != nil {
			return err
		}
		inv.NICs, err = nics(sys)
		return err
	})
	return inv, err
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// optional drops the error of a collection the BMC does not implement.
func optional[T any](v T, err error) (T, error) {
	if err != nil && isStatus(err, http.StatusNotFound) {
		var zero T
		return zero, nil
	}
	return v, err
}

func fillFromChassis(sys *schemas.ComputerSystem, inv *Inventory) error {
	chassis, err := optional(sys.Chassis())
	if err != nil {
		return err
	}
	for _, ch := range chassis {
		if ch.Manufacturer == "" {
			continue
		}
		inv.Manufacturer = cmpOr(inv.Manufacturer, ch.Manufacturer)
		inv.Model = cmpOr(inv.Model, ch.Model)
		inv.SerialNumber = cmpOr(inv.SerialNumber, ch.SerialNumber)
		break
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func fillProcessorsAndMemory(sys *schemas.ComputerSystem, inv *Inventory) error {
	if inv.CPUCount == 0 || inv.CPUModel == "" {
		procs, err := optional(sys.Processors())
		if err != nil {
			return err
		}
		count := 0
		for _, p := range procs {
			if present(p.Status) && (p.ProcessorType == "" || p.ProcessorType == schemas.CPUProcessorType) {
				count++
				inv.CPUModel = cmpOr(inv.CPUModel, p.Model)
			}
		}
		if inv.CPUCount == 0 {
			inv.CPUCount = count
		}
	}
	if inv.MemoryBytes == 0 {
		dimms, err := optional(sys.Memory())
		if err != nil {
			return err
		}
		for _, m := range dimms {
			if present(m.Status) {
				inv.MemoryBytes += int64(deref(m.CapacityMiB)) << 20
			}
		}
	}
	return nil
}

func present(s schemas.Status) bool { return s.State != schemas.AbsentState }

func drives(sys *schemas.ComputerSystem) ([]Drive, error) {
	var out []Drive
	storage, err := optional(sys.Storage())
	if err != nil {
		return nil, err
	}
	for _, st := range storage {
		ds, err := optional(st.Drives())
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			if present(d.Status) {
				out = append(out, Drive{Name: cmpOr(d.Name, d.ID), SizeBytes: int64(deref(d.CapacityBytes)), MediaType: string(d.MediaType), Protocol: string(d.Protocol)})
			}
		}
	}
	if len(out) == 0 {
		// Older BMCs describe disks only through SimpleStorage.
		simple, err := optional(sys.SimpleStorage())
		if err != nil {
			return nil, err
		}
		for _, ss := range simple {
			for _, d := range ss.Devices {
				if present(d.Status) {
					out = append(out, Drive{Name: d.Name, SizeBytes: int64(deref(d.CapacityBytes))}) //nolint:gosec // G115: no drive holds 8 EiB
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b Drive) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// nics lists the server's ports. Systems list more Ethernet interfaces than
// that: a VLAN on a port (typed Virtual, or VLAN-enabled on top of a related
// interface, with the port's MAC) and the host's end of the BMC's host
// interface (a USB network link to the BMC, linked to the manager's
// HostInterface). Neither is a NIC of the server.
func nics(sys *schemas.ComputerSystem) ([]NIC, error) {
	ifaces, err := optional(sys.EthernetInterfaces())
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ifaces, func(a, b *schemas.EthernetInterface) int { return strings.Compare(a.ODataID, b.ODataID) })
	var out []NIC
	macs := map[string]bool{}
	for _, n := range ifaces {
		if !isPort(n) {
			continue
		}
		mac := cmpOr(n.MACAddress, n.PermanentMACAddress)
		if mac != "" && macs[strings.ToLower(mac)] {
			continue // a second interface on the same port
		}
		macs[strings.ToLower(mac)] = true
		out = append(out, NIC{Name: cmpOr(n.Name, n.ID), MACAddress: mac, SpeedMbps: deref(n.SpeedMbps)})
	}
	slices.SortFunc(out, func(a, b NIC) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func isPort(n *schemas.EthernetInterface) bool {
	if n.EthernetInterfaceType == schemas.VirtualEthernetDeviceType {
		return false
	}
	// gofish keeps the links to itself; they are read from the JSON.
	var raw struct {
		Links struct {
			HostInterface struct {
				ID string `json:"@odata.id"`
			}
			RelatedInterfaces []struct {
				ID string `json:"@odata.id"`
			}
		}
	}
	_ = json.Unmarshal(n.RawData, &raw) // gofish parsed the same bytes
	if raw.Links.HostInterface.ID != "" {
		return false
	}
	return !n.VLAN.VLANEnable || len(raw.Links.RelatedInterfaces) == 0
}

// Health reads the chassis Thermal and Power resources and the system's
// processors, memory and drives. A subsystem with no present part is
// Unknown; the message names every part that is not OK.
func (c *redfishClient) Health(ctx context.Context) (Health, error) {
	var h Health
	err := c.do(ctx, "Health", func(api *gofish.APIClient) error {
		sys, err := c.system(api)
		if err != nil {
			return err
		}
		parts := map[Subsystem][]namedStatus{}
		if err := chassisParts(sys, parts); err != nil {
			return err
		}
		if err := systemParts(sys, parts); err != nil {
			return err
		}
		h = Health{}
		for _, s := range Subsystems {
			h.Subsystems = append(h.Subsystems, summarize(s, parts[s]))
		}
		h.Overall = worstOf(healthState(cmpOr(string(sys.Status.HealthRollup), string(sys.Status.Health))), h.Subsystems)
		return nil
	})
	return h, err
}

type namedStatus struct {
	name   string
	status schemas.Status
	// predicted: the part predicts its own failure.
	predicted bool
}

func chassisParts(sys *schemas.ComputerSystem, parts map[Subsystem][]namedStatus) error {
	chassis, err := optional(sys.Chassis())
	if err != nil {
		return err
	}
	for _, ch := range chassis {
		thermal, err := optional(ch.Thermal())
		if err != nil {
			return err
		}
		if thermal != nil {
			for _, t := range thermal.Temperatures {
				parts[SubsystemThermal] = append(parts[SubsystemThermal], namedStatus{name: cmpOr(t.Name, t.MemberID), status: t.Status})
			}
			for _, f := range thermal.Fans {
				//nolint:staticcheck // SA1019: BMCs of Thermal before v1.1 name a fan only in FanName
				parts[SubsystemFans] = append(parts[SubsystemFans], namedStatus{name: cmpOr(cmpOr(f.Name, f.FanName), f.MemberID), status: f.Status})
			}
		}
		power, err := optional(ch.Power())
		if err != nil {
			return err
		}
		if power != nil {
			for _, p := range power.PowerSupplies {
				parts[SubsystemPowerSupplies] = append(parts[SubsystemPowerSupplies], namedStatus{name: cmpOr(p.Name, p.MemberID), status: p.Status})
			}
		}
	}
	return nil
}

func systemParts(sys *schemas.ComputerSystem, parts map[Subsystem][]namedStatus) error {
	procs, err := optional(sys.Processors())
	if err != nil {
		return err
	}
	for _, p := range procs {
		parts[SubsystemProcessors] = append(parts[SubsystemProcessors], namedStatus{name: cmpOr(p.Name, p.ID), status: p.Status})
	}
	dimms, err := optional(sys.Memory())
	if err != nil {
		return err
	}
	for _, m := range dimms {
		parts[SubsystemMemory] = append(parts[SubsystemMemory], namedStatus{name: cmpOr(m.Name, m.ID), status: m.Status})
	}
	storage, err := optional(sys.Storage())
	if err != nil {
		return err
	}
	for _, st := range storage {
		ds, err := optional(st.Drives())
		if err != nil {
			return err
		}
		for _, d := range ds {
			parts[SubsystemStorage] = append(parts[SubsystemStorage], namedStatus{name: cmpOr(d.Name, d.ID), status: d.Status, predicted: d.FailurePredicted})
		}
	}
	if len(parts[SubsystemStorage]) == 0 {
		// Older BMCs describe disks only through SimpleStorage.
		simple, err := optional(sys.SimpleStorage())
		if err != nil {
			return err
		}
		for _, ss := range simple {
			for _, d := range ss.Devices {
				parts[SubsystemStorage] = append(parts[SubsystemStorage], namedStatus{name: d.Name, status: d.Status})
			}
		}
	}
	// Without member resources, the summaries still carry a rollup. Their
	// Status is deprecated (v1.16) for Conditions, which the BMCs that
	// lack member resources do not have.
	//nolint:staticcheck // SA1019: see above
	if len(parts[SubsystemProcessors]) == 0 && sys.ProcessorSummary.Status.State != "" {
		parts[SubsystemProcessors] = []namedStatus{{name: "processors", status: sys.ProcessorSummary.Status}} //nolint:staticcheck // SA1019: as above
	}
	//nolint:staticcheck // SA1019: as above
	if len(parts[SubsystemMemory]) == 0 && sys.MemorySummary.Status.State != "" {
		parts[SubsystemMemory] = []namedStatus{{name: "memory", status: sys.MemorySummary.Status}} //nolint:staticcheck // SA1019: as above
	}
	return nil
}

// summarize folds the parts of one subsystem. Parts are sorted by name so
// the message is the same on every poll.
func summarize(s Subsystem, parts []namedStatus) SubsystemHealth {
	out := SubsystemHealth{Subsystem: s, State: StateUnknown, Message: notReported}
	slices.SortFunc(parts, func(a, b namedStatus) int { return strings.Compare(a.name, b.name) })
	var bad []string
	seen := 0
	for _, p := range parts {
		if !present(p.status) || p.status.State == schemas.DisabledState {
			continue
		}
		st := healthState(string(cmpOr(string(p.status.HealthRollup), string(p.status.Health))))
		if p.predicted {
			st = Worse(st, StateWarning)
			out.Predicted++
		}
		if seen == 0 {
			out.State = st
		} else {
			out.State = Worse(out.State, st)
		}
		seen++
		if st != StateOK {
			bad = append(bad, partMessage(p.name, st, p.predicted))
		}
	}
	switch {
	case seen == 0:
	case len(bad) == 0:
		out.Message = fmt.Sprintf("%d of %d OK", seen, seen)
	default:
		out.Message = strings.Join(bad, "; ")
	}
	return out
}

// partMessage names a part that is not OK, and says when it predicts
// its own failure.
func partMessage(name string, st State, predicted bool) string {
	if predicted {
		return fmt.Sprintf("%s: %s, failure predicted", name, st)
	}
	return fmt.Sprintf("%s: %s", name, st)
}

func healthState(h string) State {
	switch schemas.Health(h) {
	case schemas.OKHealth:
		return StateOK
	case schemas.WarningHealth:
		return StateWarning
	case schemas.CriticalHealth:
		return StateCritical
	}
	return StateUnknown
}
