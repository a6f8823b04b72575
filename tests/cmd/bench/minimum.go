package main

import (
	"fmt"
	"sort"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// minCall is one step of the minimum call sequence of a server: the
// simulator operation, how many calls of it one server needs (a fraction for
// calls one server of the pool makes for all of them), and why no correct
// controller can do without it.
type minCall struct {
	op    string
	count float64
	why   string
}

// minSequence is the fewest Metal API calls that take one server of a pool
// from nothing to managed, in its pool's network type, in reinstall mode.
type minSequence []minCall

// provisionMinimum is what every server of a pool of perPool needs whatever
// its network type.
func provisionMinimum(perPool int) minSequence {
	return minSequence{
		{metalsim.OpFindProjectDevices, 1 / float64(perPool), "adoption check before the first create: one list of the cluster's devices serves the pool's whole wave of creates (a create whose answer was lost is looked for by its own tag, afresh)"},
		{metalsim.OpCreateDevice, 1, "create the device, booting the iPXE shell (custom_ipxe, script as userdata)"},
		{metalsim.OpFindDeviceByID, 1, "one read that sees it active, with the ports' MACs (the join config's hwAddr) and their current network state"},
		{metalsim.OpUpdateDevice, 1, "put the installer iPXE script URL and the join configuration (userdata) on the device"},
		{metalsim.OpPerformAction, 1, "reinstall with the Harvester installer"},
		{metalsim.OpUpdateDevice, 1, "after the join: clear the join configuration, which holds the join token, from the userdata"},
	}
}

// vlanMinimum is the pool's share of VLAN work; perPool servers share it.
func vlanMinimum(vlans, perPool int) minSequence {
	n := float64(perPool)
	return minSequence{
		{metalsim.OpFindVirtualNetworks, 1 / n, "the metro's VLANs, once per pool: reuse the existing, create only the missing (a VXLAN is unique per metro)"},
		{metalsim.OpCreateVirtualNetwork, float64(vlans) / n, fmt.Sprintf("%d VLANs created once per pool, by its first server", vlans)},
	}
}

// readBack follows a structural port step whose answer does not show all it
// changed.
const readBack = "read the device back: a conversion or a bulk bond change shows in full only there, and the API may answer before it has landed"

// portMinimum is pkg/network's plan for each type on a fresh two-NIC device
// (eth0 and eth1 bonded in bond0, layer 3), with one read-back per
// structural step whose answer does not show the change (a disbond of one
// port answers with the port, out of its bond). Layer-2 types install in hybrid-bonded (the installer
// needs layer 3 for the metadata service) and convert after the join.
var portMinimum = map[string]minSequence{
	equinixv1.NetworkTypeLayer3: nil,
	equinixv1.NetworkTypeHybrid: {
		{metalsim.OpDisbondPort, 1, "eth1 leaves bond0: hybrid carries the VLANs on the odd-numbered ports; its answer shows eth1 out of the bond"},
		{metalsim.OpAssignPort, 2, "VLANs 1000 and 1001 onto eth1"},
	},
	equinixv1.NetworkTypeHybridBonded: {
		{metalsim.OpAssignPort, 2, "VLANs 1000 and 1001 onto bond0, which stays layer 3"},
	},
	equinixv1.NetworkTypeLayer2Bonded: {
		{metalsim.OpAssignPort, 2, "before the install: VLANs 1000 and 1001 onto bond0 (hybrid-bonded, management VLAN tagged)"},
		{metalsim.OpConvertLayer2, 1, "after the join: bond0 to layer 2"},
		{metalsim.OpFindDeviceByID, 1, readBack},
	},
	equinixv1.NetworkTypeLayer2Individual: {
		{metalsim.OpAssignPort, 1, "before the install: management VLAN 1000 onto bond0 (hybrid-bonded)"},
		{metalsim.OpUnassignPort, 1, "after the join: VLAN 1000 off bond0 before the bond is split"},
		{metalsim.OpConvertLayer2, 1, "bond0 to layer 2"},
		{metalsim.OpFindDeviceByID, 1, readBack},
		{metalsim.OpDisbondPort, 1, "split bond0: eth0 and eth1 leave it in one bulk call"},
		{metalsim.OpFindDeviceByID, 1, readBack},
		{metalsim.OpAssignPort, 3, "VLAN 1000 onto eth0; 1000 and 1001 onto eth1"},
	},
}

// vlanCount is how many VLANs the type's example pool uses.
func vlanCount(typ string) int {
	if typ == equinixv1.NetworkTypeLayer3 {
		return 0
	}
	return 2
}

// minimumFor is the whole minimum of one server of a pool of perPool.
func minimumFor(typ string, perPool int) minSequence {
	seq := provisionMinimum(perPool)
	if n := vlanCount(typ); n > 0 {
		seq = append(seq, vlanMinimum(n, perPool)...)
	}
	return append(seq, portMinimum[typ]...)
}

func (s minSequence) total() float64 {
	var t float64
	for _, c := range s {
		t += c.count
	}
	return t
}

// byOp sums the sequence per operation.
func (s minSequence) byOp() map[string]float64 {
	out := map[string]float64{}
	for _, c := range s {
		out[c.op] += c.count
	}
	return out
}

// excess lists the operations whose measured per-server count exceeds the
// minimum, largest excess first.
func excess(measured map[string]float64, minimum map[string]float64) []string {
	type ex struct {
		op   string
		over float64
	}
	var all []ex
	for op, m := range measured {
		if over := m - minimum[op]; over > 0.001 {
			all = append(all, ex{op, over})
		}
	}
	sort.Slice(all, func(a, b int) bool {
		if all[a].over != all[b].over {
			return all[a].over > all[b].over
		}
		return all[a].op < all[b].op
	})
	out := make([]string, len(all))
	for i, e := range all {
		out[i] = fmt.Sprintf("%s +%.1f", e.op, e.over)
	}
	return out
}
