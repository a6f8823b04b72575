package bmcdriver

import (
	"fmt"
	"sort"
	"strings"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
)

// toFacts maps a BMC's inventory onto the chain's facts. What the BMC does
// not report stays empty.
func toFacts(inv bmc.Inventory, ep bmc.Endpoint) machine.Facts {
	f := machine.Facts{
		Manufacturer: inv.Manufacturer,
		Model:        inv.Model,
		SerialNumber: inv.SerialNumber,
		BIOSVersion:  inv.BIOSVersion,
		SystemUUID:   inv.SystemUUID,
		Source:       fmt.Sprintf("%s BMC at %s", protocolName(ep.Protocol), ep.Address()),
	}
	if inv.CPUCount > 0 || inv.CPUModel != "" {
		f.CPUs = []machine.Component{{Count: inv.CPUCount, Type: inv.CPUModel}}
	}
	if inv.MemoryBytes > 0 {
		f.Memory = binarySize(inv.MemoryBytes)
	}
	f.Drives = drives(inv.Drives)
	f.NICs = nics(inv.NICs)
	for _, n := range inv.NICs {
		if n.MACAddress == "" {
			continue
		}
		if f.MACs == nil {
			f.MACs = map[string]string{}
		}
		f.MACs[n.Name] = n.MACAddress
	}
	return f
}

func protocolName(p bmc.Protocol) string {
	if p == bmc.ProtocolIPMI {
		return "IPMI"
	}
	return "Redfish"
}

// drives groups identical drives: "2 x 480GB SATA SSD".
func drives(ds []bmc.Drive) []machine.Drive {
	counts := map[machine.Drive]int{}
	var order []machine.Drive
	for _, d := range ds {
		key := machine.Drive{Type: strings.TrimSpace(d.Protocol + " " + d.MediaType)}
		if d.SizeBytes > 0 {
			key.Size = decimalSize(d.SizeBytes)
		}
		if key.Size == "" && key.Type == "" {
			continue
		}
		if counts[key] == 0 {
			order = append(order, key)
		}
		counts[key]++
	}
	out := make([]machine.Drive, 0, len(order))
	for _, k := range order {
		k.Count = counts[k]
		out = append(out, k)
	}
	return out
}

// nics groups the interfaces by speed: "2 x 25Gbps".
func nics(ns []bmc.NIC) []machine.Component {
	counts := map[int]int{}
	for _, n := range ns {
		counts[n.SpeedMbps]++
	}
	speeds := make([]int, 0, len(counts))
	for s := range counts {
		speeds = append(speeds, s)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(speeds)))
	out := make([]machine.Component, 0, len(speeds))
	for _, s := range speeds {
		typ := "NIC"
		switch {
		case s >= 1000 && s%1000 == 0:
			typ = fmt.Sprintf("%dGbps", s/1000)
		case s > 0:
			typ = fmt.Sprintf("%dMbps", s)
		}
		out = append(out, machine.Component{Count: counts[s], Type: typ})
	}
	return out
}

// binarySize is memory as vendors state it: 128 GiB is "128GB".
func binarySize(b int64) string {
	const gib = 1 << 30
	if b%gib == 0 {
		return fmt.Sprintf("%dGB", b/gib)
	}
	return fmt.Sprintf("%.1fGB", float64(b)/gib)
}

// decimalSize is a drive's size as its label states it: "480GB", "3.8TB".
func decimalSize(b int64) string {
	const gb, tb = 1e9, 1e12
	if b >= tb {
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(b)/tb), ".0") + "TB"
	}
	return fmt.Sprintf("%.0fGB", float64(b)/gb)
}

// fromPower maps a BMC's power; the BMC package reads a transition as
// unknown.
func fromPower(p bmc.PowerState) machine.PowerState {
	if s, ok := map[bmc.PowerState]machine.PowerState{bmc.PowerOn: machine.PowerOn, bmc.PowerOff: machine.PowerOff}[p]; ok {
		return s
	}
	return machine.PowerUnknown
}

// fromError classifies a BMC failure for the chain. The message is the
// BMC package's own, which names no credential; the endpoint (which names
// the user) is left out. During a power command (command true) a failure
// that could come after the BMC read it may have let it run.
func fromError(op string, err error, command bool) error {
	if err == nil {
		return nil
	}
	return classify(op, err, command)
}

func classify(op string, err error, command bool) *failure.Error {
	out := machine.FromSeam(op, err)
	c := failure.ClassOf(err)
	switch {
	case command && c == failure.Unreachable:
		// No connection was made (refused, no route, no answer to the
		// dial): the command never left, even on a session kept from
		// before.
		out.Class = failure.Busy
		out.Message = "nothing was sent: " + out.Message
	case command && out.Class == failure.Refused && c != failure.Unsupported && c != failure.Invalid:
		// A protocol or certificate failure after the login is a broken
		// answer: the command may have run.
		out.Class = failure.Unknown
	}
	return out
}

// notSent classifies a failed login before a power command: the command
// never left, so it is a refusal for now, tried again later.
func notSent(err error) error {
	out := classify("Power", err, false)
	if out.Class == failure.Transient || out.Class == failure.Unknown {
		out.Class = failure.Busy
	}
	out.Message = "nothing was sent: " + out.Message
	return out
}

// toHealth maps a BMC's health reading onto the chain's.
func toHealth(h bmc.Health) machine.Health {
	out := machine.Health{Subsystems: make([]machine.SubsystemHealth, 0, len(bmc.Subsystems))}
	for _, s := range bmc.Subsystems {
		sh := h.Get(s)
		out.Subsystems = append(out.Subsystems, machine.SubsystemHealth{
			Subsystem: string(s), State: machine.HealthState(sh.State), Message: sh.Message, Predicted: sh.Predicted,
		})
	}
	return out
}
