package network

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

// Phase says which state the ports should reach. The layer-2 types cannot be
// entered before the node has joined: the installer fetches its configuration
// from the metadata service, which pure layer 2 cannot reach.
// Until then they wait in hybrid-bonded, layer 3 with the management VLAN
// already tagged on bond0, so the installed node reaches the cluster over it.
type Phase int

const (
	// PhaseInstall is the state the installer runs in.
	PhaseInstall Phase = iota
	// PhaseJoined is the pool's network type, reached once the node has joined.
	PhaseJoined
)

// managementBond is the bond holding the server's layer-3 addresses.
const managementBond = "bond0"

// PortWant is the desired state of one port.
type PortWant struct {
	// Bonded: a physical port in its bond; for a bond, its members bonded.
	Bonded bool
	// Layer2 applies to bonds.
	Layer2 bool
	// VLANs are the VXLAN numbers that must be on the port, and no others.
	VLANs []int
}

// Desired maps port names to their desired state.
type Desired map[string]PortWant

// EffectiveType is the network type the ports converge to in phase.
func EffectiveType(t *equinixv1.InstanceTemplate, phase Phase) string {
	typ := t.NetworkingConfiguration.Type
	if typ == "" {
		typ = equinixv1.NetworkTypeLayer3
	}
	if IsLayer2(typ) && phase == PhaseInstall {
		return equinixv1.NetworkTypeHybridBonded
	}
	return typ
}

// Want computes the desired state of the device's ports.
func Want(ports []metal.Port, t *equinixv1.InstanceTemplate, phase Phase) (Desired, error) {
	typ := EffectiveType(t, phase)
	vlans, err := listedVLANs(t)
	if err != nil {
		return nil, err
	}
	if IsLayer2(t.NetworkingConfiguration.Type) && phase == PhaseInstall {
		vlans = installVLANs(t, vlans)
	}
	names := map[string]bool{}
	for _, p := range ports {
		names[p.Name] = true
	}
	for port := range vlans {
		if !names[port] {
			return nil, fmt.Errorf("interfaceConfiguration names %s, which this server's plan does not have (ports: %s)", port, portList(ports))
		}
	}
	d := Desired{}
	for _, p := range ports {
		w := PortWant{VLANs: vlans[p.Name]}
		switch p.Type {
		case metal.PortTypeBond:
			w.Layer2 = IsLayer2(typ)
			if !w.Layer2 && p.Name != managementBond {
				// Only bond0 carries layer-3 addresses. The other bonds start in
				// layer 2 (terraform-provider-packet #306) and keep their layer:
				// converting one would request addresses nothing uses.
				w.Layer2 = IsLayer2Port(p)
			}
			w.Bonded = typ != equinixv1.NetworkTypeLayer2Individual
		default:
			w.Bonded = physicalBonded(typ, p.Name)
		}
		d[p.Name] = w
	}
	return d, nil
}

// installVLANs keeps, before the join, only what the management network needs:
// the VLANs of the management ports, tagged on bond0 (layer 3 still up).
func installVLANs(t *equinixv1.InstanceTemplate, listed map[string][]int) map[string][]int {
	set := map[int]bool{}
	if t.NetworkingConfiguration.Type == equinixv1.NetworkTypeLayer2Bonded {
		for _, v := range listed["bond0"] {
			set[v] = true
		}
	} else {
		for _, m := range t.ManagementInterface {
			for _, v := range listed[m] {
				set[v] = true
			}
		}
	}
	return map[string][]int{"bond0": sortedKeys(set)}
}

func physicalBonded(typ, name string) bool {
	switch typ {
	case equinixv1.NetworkTypeLayer2Individual:
		return false
	case equinixv1.NetworkTypeHybrid:
		// Hybrid unbonds the odd-numbered ports (eth1, eth3) for VLANs.
		n, err := strconv.Atoi(strings.TrimPrefix(name, "eth"))
		return err != nil || n%2 == 0
	default:
		return true
	}
}

func listedVLANs(t *equinixv1.InstanceTemplate) (map[string][]int, error) {
	out := map[string][]int{}
	for _, ic := range t.NetworkingConfiguration.InterfaceConfiguration {
		set := map[int]bool{}
		for _, s := range ic.VLANIDs {
			n, err := strconv.Atoi(s)
			if err != nil || n < 2 || n > 3999 {
				return nil, fmt.Errorf("interface %s: %q is not a VLAN ID from 2 to 3999", ic.Name, s)
			}
			set[n] = true
		}
		out[ic.Name] = sortedKeys(set)
	}
	return out, nil
}

// VXLANs returns every VLAN the template attaches, sorted.
func VXLANs(t *equinixv1.InstanceTemplate) []int {
	listed, err := listedVLANs(t)
	if err != nil {
		return nil
	}
	set := map[int]bool{}
	for _, vs := range listed {
		for _, v := range vs {
			set[v] = true
		}
	}
	return sortedKeys(set)
}

func sortedKeys(set map[int]bool) []int {
	out := make([]int, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	sort.Ints(out)
	return out
}

func portList(ports []metal.Port) string {
	names := make([]string, 0, len(ports))
	for _, p := range ports {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
