package main

import (
	"slices"
	"testing"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/pkg/network"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// freshPorts is a new c3.small.x86 device: eth0 and eth1 bonded in bond0,
// layer 3.
func freshPorts() []metal.Port {
	return []metal.Port{
		{ID: "p-eth0", Name: "eth0", Type: metal.PortTypePhysical, Bonded: true, BondName: "bond0", NetworkType: metal.NetworkTypeLayer3},
		{ID: "p-eth1", Name: "eth1", Type: metal.PortTypePhysical, Bonded: true, BondName: "bond0", NetworkType: metal.NetworkTypeLayer3},
		{ID: "p-bond0", Name: "bond0", Type: metal.PortTypeBond, Bonded: true, NetworkType: metal.NetworkTypeLayer3},
	}
}

var stepOps = map[network.Op]string{
	network.OpAssign: metalsim.OpAssignPort, network.OpUnassign: metalsim.OpUnassignPort,
	network.OpBond: metalsim.OpBondPort, network.OpDisbond: metalsim.OpDisbondPort,
	network.OpToLayer2: metalsim.OpConvertLayer2, network.OpToLayer3: metalsim.OpConvertLayer3,
}

// apply lands a step on the ports as the API eventually does.
func apply(ports []metal.Port, s network.Step) []metal.Port {
	out := slices.Clone(ports)
	for i := range out {
		p := &out[i]
		member := s.Bulk && p.BondName == s.Port
		if p.Name != s.Port && !member {
			continue
		}
		switch s.Op {
		case network.OpAssign:
			p.VLANs = append(slices.Clone(p.VLANs), metal.VLANRef{ID: s.VLANID, VXLAN: s.VXLAN})
		case network.OpUnassign:
			p.VLANs = slices.DeleteFunc(slices.Clone(p.VLANs), func(v metal.VLANRef) bool { return v.ID == s.VLANID })
		case network.OpBond:
			p.Bonded = p.Bonded || p.Type == metal.PortTypePhysical
		case network.OpDisbond:
			if p.Type == metal.PortTypePhysical {
				p.Bonded = false
			}
		case network.OpToLayer2:
			p.NetworkType = metal.NetworkTypeLayer2Bonded
		case network.OpToLayer3:
			p.NetworkType = metal.NetworkTypeLayer3
		}
	}
	return out
}

// answer is the port a step's call answers with once the step has landed.
func answer(ports []metal.Port, s network.Step) *metal.Port {
	for _, p := range ports {
		if p.ID == s.PortID {
			return &p
		}
	}
	return nil
}

// plan runs pkg/network's planner through both phases, landing each step,
// and counts the port calls per simulator operation and the structural
// steps whose answer does not show their change (each needs a read-back).
func plan(t *testing.T, typ string) (map[string]float64, float64) {
	t.Helper()
	tmpl := &equinixv1.InstanceTemplate{EquinixMetal: equinixv1.EquinixMetal{ManagementInterface: []string{"eth0"}, NetworkingConfiguration: networking(typ)}}
	ids := map[int]string{1000: "vlan-1000", 1001: "vlan-1001"}
	ports := freshPorts()
	calls := map[string]float64{}
	var structural float64
	for _, phase := range []network.Phase{network.PhaseInstall, network.PhaseJoined} {
		want, err := network.Want(ports, tmpl, phase)
		require.NoError(t, err)
		for _, s := range network.Steps(ports, want, ids) {
			calls[stepOps[s.Op]]++
			before := ports
			ports = apply(ports, s)
			if _, shown := network.AfterAnswer(before, s, answer(ports, s)); s.Structural() && !shown {
				structural++
			}
		}
		again, err := network.Want(ports, tmpl, phase)
		require.NoError(t, err)
		require.Empty(t, network.Steps(ports, again, ids), "%s: the plan converges in phase %d", typ, phase)
	}
	return calls, structural
}

// The port part of each minimum is exactly pkg/network's plan, with one
// read-back per structural step whose answer does not show it.
func TestPortMinimumMatchesThePlanner(t *testing.T) {
	for _, typ := range networkTypes {
		t.Run(typ, func(t *testing.T) {
			calls, structural := plan(t, typ)
			written := portMinimum[typ].byOp()
			assert.InDelta(t, structural, written[metalsim.OpFindDeviceByID], 1e-9, "read-backs")
			delete(written, metalsim.OpFindDeviceByID)
			assert.Equal(t, calls, written)
		})
	}
}

func TestMinimumTotals(t *testing.T) {
	// Pools of 10: the adoption list and the VLAN work are shared.
	cases := map[string]float64{
		equinixv1.NetworkTypeLayer3:           5.1,
		equinixv1.NetworkTypeHybrid:           5.1 + 0.3 + 3,
		equinixv1.NetworkTypeHybridBonded:     5.1 + 0.3 + 2,
		equinixv1.NetworkTypeLayer2Bonded:     5.1 + 0.3 + 4,
		equinixv1.NetworkTypeLayer2Individual: 5.1 + 0.3 + 9,
	}
	for typ, want := range cases {
		t.Run(typ, func(t *testing.T) {
			assert.InDelta(t, want, minimumFor(typ, 10).total(), 1e-9)
		})
	}
	assert.InDelta(t, 6+3+3, minimumFor(equinixv1.NetworkTypeHybrid, 1).total(), 1e-9, "a pool of one pays the list and the VLAN work alone")
}

func TestExcess(t *testing.T) {
	measured := map[string]float64{"findDeviceById": 4, "createDevice": 1, "findVirtualNetworks": 1.2}
	minimum := map[string]float64{"findDeviceById": 2, "createDevice": 1, "findVirtualNetworks": 0.2}
	assert.Equal(t, []string{"findDeviceById +2.0", "findVirtualNetworks +1.0"}, excess(measured, minimum))
	assert.Empty(t, excess(minimum, minimum))
}

func TestDeviceSequences(t *testing.T) {
	dev := metalv1.Device{Id: metalv1.PtrString("d1"), NetworkPorts: []metalv1.Port{{Id: metalv1.PtrString("p1")}}}
	reqs := []metalsim.Request{
		{Path: "/metal/v1/projects/p/devices", Operation: metalsim.OpCreateDevice},
		{Path: "/metal/v1/devices/d1", Operation: metalsim.OpFindDeviceByID},
		{Path: "/metal/v1/devices/d1", Operation: metalsim.OpFindDeviceByID},
		{Path: "/metal/v1/ports/p1/disbond", Operation: metalsim.OpDisbondPort},
		{Path: "/metal/v1/devices/d1/actions", Operation: metalsim.OpPerformAction},
		{Path: "/metal/v1/devices/d2", Operation: metalsim.OpFindDeviceByID},
	}
	seqs := deviceSequences(reqs, []metalv1.Device{dev})
	assert.Equal(t, map[string][]string{
		"d1": {metalsim.OpFindDeviceByID, metalsim.OpFindDeviceByID, metalsim.OpDisbondPort, metalsim.OpPerformAction},
		"d2": {metalsim.OpFindDeviceByID},
	}, seqs)
	delete(seqs, "d2")
	seq, n := typicalSequence(seqs)
	assert.Equal(t, "findDeviceById ×2, disbondPort, performAction", seq)
	assert.Equal(t, 1, n)
}
