package network

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
)

var vlanIDs = map[int]string{1000: "vlan-1000", 1001: "vlan-1001"}

// ports builds a two-NIC device: eth0 and eth1 in bond0.
type portsBuilder struct{ ports []metal.Port }

func twoNIC() *portsBuilder {
	return &portsBuilder{ports: []metal.Port{
		{ID: "p-eth0", Name: "eth0", Type: metal.PortTypePhysical, Bonded: true, BondName: "bond0", NetworkType: metal.NetworkTypeLayer3},
		{ID: "p-eth1", Name: "eth1", Type: metal.PortTypePhysical, Bonded: true, BondName: "bond0", NetworkType: metal.NetworkTypeLayer3},
		{ID: "p-bond0", Name: "bond0", Type: metal.PortTypeBond, Bonded: true, NetworkType: metal.NetworkTypeLayer3},
	}}
}

// fourNIC is a fresh 4-NIC device: bond1 over eth2/eth3 starts in layer 2.
func fourNIC() *portsBuilder {
	b := twoNIC()
	b.ports = append(b.ports,
		metal.Port{ID: "p-eth2", Name: "eth2", Type: metal.PortTypePhysical, Bonded: true, BondName: "bond1", NetworkType: metal.NetworkTypeLayer2Bonded},
		metal.Port{ID: "p-eth3", Name: "eth3", Type: metal.PortTypePhysical, Bonded: true, BondName: "bond1", NetworkType: metal.NetworkTypeLayer2Bonded},
		metal.Port{ID: "p-bond1", Name: "bond1", Type: metal.PortTypeBond, Bonded: true, NetworkType: metal.NetworkTypeLayer2Bonded},
	)
	return b
}

func (b *portsBuilder) port(name string) *metal.Port {
	for i := range b.ports {
		if b.ports[i].Name == name {
			return &b.ports[i]
		}
	}
	panic(name)
}
func (b *portsBuilder) unbonded(names ...string) *portsBuilder {
	for _, n := range names {
		b.port(n).Bonded = false
	}
	return b
}
func (b *portsBuilder) layer2() *portsBuilder {
	b.port("bond0").NetworkType = metal.NetworkTypeLayer2Bonded
	return b
}
func (b *portsBuilder) hybridBonded() *portsBuilder {
	b.port("bond0").NetworkType = metal.NetworkTypeHybridBonded
	return b
}
func (b *portsBuilder) vlans(name string, vx ...int) *portsBuilder {
	for _, v := range vx {
		b.port(name).VLANs = append(b.port(name).VLANs, metal.VLANRef{ID: vlanIDs[v]})
	}
	return b
}

func template(typ string, ifaces ...equinixv1.InterfaceConfiguration) *equinixv1.InstanceTemplate {
	return &equinixv1.InstanceTemplate{
		EquinixMetal: equinixv1.EquinixMetal{
			ManagementInterface:     []string{"eth0"},
			NetworkingConfiguration: equinixv1.NetworkingConfiguration{Type: typ, InterfaceConfiguration: ifaces},
		},
	}
}

func iface(name string, vlans ...string) equinixv1.InterfaceConfiguration {
	return equinixv1.InterfaceConfiguration{Name: name, VLANIDs: vlans}
}

func stepStrings(steps []Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.String()
	}
	return out
}

// The seed's five samples, from a freshly provisioned (layer 3) server.
func TestStepsFromLayer3(t *testing.T) {
	cases := []struct {
		name  string
		tmpl  *equinixv1.InstanceTemplate
		phase Phase
		want  []string
	}{
		{"layer3 is the starting point", template(equinixv1.NetworkTypeLayer3), PhaseJoined, nil},
		{"hybrid", template(equinixv1.NetworkTypeHybrid, iface("eth1", "1000", "1001")), PhaseJoined,
			[]string{"disbond eth1", "assign VLAN 1000 to eth1", "assign VLAN 1001 to eth1"}},
		{"hybrid-bonded", template(equinixv1.NetworkTypeHybridBonded, iface("bond0", "1000", "1001")), PhaseJoined,
			[]string{"assign VLAN 1000 to bond0", "assign VLAN 1001 to bond0"}},
		{"layer2-bonded", template(equinixv1.NetworkTypeLayer2Bonded, iface("bond0", "1000", "1001")), PhaseJoined,
			[]string{"convert-layer-2 on bond0", "assign VLAN 1000 to bond0", "assign VLAN 1001 to bond0"}},
		{"layer2-individual", template(equinixv1.NetworkTypeLayer2Individual, iface("eth0", "1000"), iface("eth1", "1000", "1001")), PhaseJoined,
			[]string{"convert-layer-2 on bond0", "disbond every port of bond0", "assign VLAN 1000 to eth0", "assign VLAN 1000 to eth1", "assign VLAN 1001 to eth1"}},
		{"layer2-bonded waits in hybrid-bonded for the install", template(equinixv1.NetworkTypeLayer2Bonded, iface("bond0", "1000", "1001")), PhaseInstall,
			[]string{"assign VLAN 1000 to bond0", "assign VLAN 1001 to bond0"}},
		{"layer2-individual tags only the management VLANs on bond0 for the install", template(equinixv1.NetworkTypeLayer2Individual, iface("eth0", "1000"), iface("eth1", "1000", "1001")), PhaseInstall,
			[]string{"assign VLAN 1000 to bond0"}},
		{"layer-3 types are the same in both phases", template(equinixv1.NetworkTypeHybrid, iface("eth1", "1000")), PhaseInstall,
			[]string{"disbond eth1", "assign VLAN 1000 to eth1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ports := twoNIC().ports
			d, err := Want(ports, tc.tmpl, tc.phase)
			require.NoError(t, err)
			assert.Equal(t, tc.want, nilIfEmpty(stepStrings(Steps(ports, d, vlanIDs))))
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestConvergedDevicesNeedNoSteps(t *testing.T) {
	cases := map[string]struct {
		ports *portsBuilder
		tmpl  *equinixv1.InstanceTemplate
	}{
		"hybrid":            {twoNIC().unbonded("eth1").vlans("eth1", 1000, 1001), template(equinixv1.NetworkTypeHybrid, iface("eth1", "1000", "1001"))},
		"hybrid-bonded":     {twoNIC().vlans("bond0", 1000), template(equinixv1.NetworkTypeHybridBonded, iface("bond0", "1000"))},
		"layer2-bonded":     {twoNIC().layer2().vlans("bond0", 1000), template(equinixv1.NetworkTypeLayer2Bonded, iface("bond0", "1000"))},
		"layer2-individual": {twoNIC().layer2().unbonded("eth0", "eth1", "bond0").vlans("eth0", 1000), template(equinixv1.NetworkTypeLayer2Individual, iface("eth0", "1000"))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := Want(tc.ports.ports, tc.tmpl, PhaseJoined)
			require.NoError(t, err)
			assert.Empty(t, Steps(tc.ports.ports, d, vlanIDs))
		})
	}
}

func TestStepsBackAndBetween(t *testing.T) {
	t.Run("layer2-individual back to layer3 removes VLANs before bonding and converting", func(t *testing.T) {
		ports := twoNIC().layer2().unbonded("eth0", "eth1", "bond0").vlans("eth0", 1000).vlans("eth1", 1001).ports
		d, err := Want(ports, template(equinixv1.NetworkTypeLayer3), PhaseJoined)
		require.NoError(t, err)
		assert.Equal(t, []string{"unassign VLAN 1000 from eth0", "unassign VLAN 1001 from eth1",
			"bond every port of bond0", "convert-layer-3 on bond0"}, stepStrings(Steps(ports, d, vlanIDs)))
	})
	t.Run("install state of layer2-individual to its final state", func(t *testing.T) {
		ports := twoNIC().vlans("bond0", 1000).ports
		d, err := Want(ports, template(equinixv1.NetworkTypeLayer2Individual, iface("eth0", "1000"), iface("eth1", "1000", "1001")), PhaseJoined)
		require.NoError(t, err)
		assert.Equal(t, []string{"unassign VLAN 1000 from bond0", "convert-layer-2 on bond0", "disbond every port of bond0",
			"assign VLAN 1000 to eth0", "assign VLAN 1000 to eth1", "assign VLAN 1001 to eth1"}, stepStrings(Steps(ports, d, vlanIDs)))
	})
	t.Run("install state of layer2-bonded converts in one call", func(t *testing.T) {
		ports := twoNIC().vlans("bond0", 1000, 1001).ports
		d, err := Want(ports, template(equinixv1.NetworkTypeLayer2Bonded, iface("bond0", "1000", "1001")), PhaseJoined)
		require.NoError(t, err)
		assert.Equal(t, []string{"convert-layer-2 on bond0"}, stepStrings(Steps(ports, d, vlanIDs)))
	})
	t.Run("a changed VLAN list changes exactly those assignments", func(t *testing.T) {
		ports := twoNIC().unbonded("eth1").vlans("eth1", 1000, 1001).ports
		d, err := Want(ports, template(equinixv1.NetworkTypeHybrid, iface("eth1", "1001", "1002")), PhaseJoined)
		require.NoError(t, err)
		steps := Steps(ports, d, map[int]string{1000: "vlan-1000", 1001: "vlan-1001", 1002: "vlan-1002"})
		assert.Equal(t, []string{"unassign VLAN 1000 from eth1", "assign VLAN 1002 to eth1"}, stepStrings(steps))
		assert.Equal(t, "vlan-1002", steps[1].VLANID)
		assert.Equal(t, "p-eth1", steps[1].PortID)
	})
	t.Run("hybrid back to layer3 bonds the single port", func(t *testing.T) {
		ports := twoNIC().unbonded("eth1").vlans("eth1", 1000).ports
		d, err := Want(ports, template(equinixv1.NetworkTypeLayer3), PhaseJoined)
		require.NoError(t, err)
		assert.Equal(t, []string{"unassign VLAN 1000 from eth1", "bond eth1"}, stepStrings(Steps(ports, d, vlanIDs)))
	})
}

func TestWantRejectsPortsThePlanLacks(t *testing.T) {
	_, err := Want(twoNIC().ports, template(equinixv1.NetworkTypeHybrid, iface("eth3", "1000")), PhaseJoined)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "eth3")
	assert.Contains(t, err.Error(), "bond0, eth0, eth1")
}

func TestLanded(t *testing.T) {
	cases := []struct {
		name          string
		before, after *portsBuilder
		step          Step
		want          bool
	}{
		{"a conversion answered before it landed, with a VLAN unassigned in the same pass",
			twoNIC().vlans("bond0", 1000).hybridBonded(), twoNIC(), Step{Op: OpToLayer2, Port: "bond0"}, false},
		{"a conversion that landed", twoNIC(), twoNIC().layer2(), Step{Op: OpToLayer2, Port: "bond0"}, true},
		{"back to layer 3", twoNIC().layer2(), twoNIC(), Step{Op: OpToLayer3, Port: "bond0"}, true},
		{"a disbond of one port", twoNIC(), twoNIC().unbonded("eth1"), Step{Op: OpDisbond, Port: "eth1"}, true},
		{"a bulk disbond shows on the members", twoNIC().layer2(), twoNIC().layer2().unbonded("eth0", "eth1"), Step{Op: OpDisbond, Port: "bond0", Bulk: true}, true},
		{"a bond not yet applied", twoNIC().unbonded("eth1"), twoNIC().unbonded("eth1"), Step{Op: OpBond, Port: "eth1"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Landed(tc.before.ports, tc.after.ports, tc.step))
		})
	}
}

// Only bond0 holds the addresses: the layer-3 types never convert bond1,
// which a 4-NIC server starts with in layer 2.
func TestStepsOnFourNICPlans(t *testing.T) {
	cases := []struct {
		name string
		tmpl *equinixv1.InstanceTemplate
		want []string
	}{
		{"layer3 leaves bond1 in layer 2", template(equinixv1.NetworkTypeLayer3), nil},
		{"hybrid unbonds eth1 and eth3", template(equinixv1.NetworkTypeHybrid, iface("eth1", "1000"), iface("eth3", "1001")),
			[]string{"disbond eth1", "disbond eth3", "assign VLAN 1000 to eth1", "assign VLAN 1001 to eth3"}},
		{"hybrid-bonded tags both bonds", template(equinixv1.NetworkTypeHybridBonded, iface("bond0", "1000"), iface("bond1", "1001")),
			[]string{"assign VLAN 1000 to bond0", "assign VLAN 1001 to bond1"}},
		{"layer2-individual splits both bonds", template(equinixv1.NetworkTypeLayer2Individual, iface("eth0", "1000"), iface("eth2", "1001")),
			[]string{"convert-layer-2 on bond0", "disbond every port of bond0", "disbond every port of bond1",
				"assign VLAN 1000 to eth0", "assign VLAN 1001 to eth2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ports := fourNIC().ports
			d, err := Want(ports, tc.tmpl, PhaseJoined)
			require.NoError(t, err)
			assert.Equal(t, tc.want, nilIfEmpty(stepStrings(Steps(ports, d, vlanIDs))))
		})
	}
	t.Run("layer2-individual back to layer3 bonds bond1 again without converting it", func(t *testing.T) {
		ports := fourNIC().layer2().unbonded("eth0", "eth1", "bond0", "eth2", "eth3", "bond1").ports
		d, err := Want(ports, template(equinixv1.NetworkTypeLayer3), PhaseJoined)
		require.NoError(t, err)
		assert.Equal(t, []string{"bond every port of bond0", "convert-layer-3 on bond0", "bond every port of bond1"},
			stepStrings(Steps(ports, d, vlanIDs)))
	})
}

// Device reads name a port's VLANs by ID. One missing from the metro's map
// (deleted from the list since, say) is still unassigned, each on its own.
func TestUnknownVLANsAreUnassignedOneByOne(t *testing.T) {
	b := twoNIC()
	b.port("bond0").VLANs = []metal.VLANRef{{ID: "vlan-gone-a"}, {ID: "vlan-1000"}, {ID: "vlan-gone-b"}}
	d, err := Want(b.ports, template(equinixv1.NetworkTypeHybridBonded, iface("bond0", "1000")), PhaseJoined)
	require.NoError(t, err)
	steps := Steps(b.ports, d, vlanIDs)
	assert.ElementsMatch(t, []string{"unassign VLAN vlan-gone-a from bond0", "unassign VLAN vlan-gone-b from bond0"}, stepStrings(steps))
}

// VLAN steps answered by the API need no read-back: applied to the ports,
// they leave nothing to do.
func TestAfterVLANStepsConverges(t *testing.T) {
	b := twoNIC().hybridBonded()
	b.port("bond0").VLANs = []metal.VLANRef{{ID: "vlan-gone"}}
	d, err := Want(b.ports, template(equinixv1.NetworkTypeHybridBonded, iface("bond0", "1000", "1001")), PhaseJoined)
	require.NoError(t, err)
	steps := Steps(b.ports, d, vlanIDs)
	require.Equal(t, []string{"unassign VLAN vlan-gone from bond0", "assign VLAN 1000 to bond0", "assign VLAN 1001 to bond0"}, stepStrings(steps))
	after := AfterVLANSteps(b.ports, steps)
	assert.Empty(t, Steps(after, d, vlanIDs))
	assert.Equal(t, []metal.VLANRef{{ID: "vlan-gone"}}, b.port("bond0").VLANs, "the ports given are not changed")
}

// A bond or disbond of one port is seen in the API's answer; a bulk one, a
// conversion, or an answer from before the change is read back.
func TestAfterAnswer(t *testing.T) {
	disbond := Step{Op: OpDisbond, Port: "eth1", PortID: "p-eth1"}
	answered := metal.Port{ID: "p-eth1", Name: "eth1", Bonded: false, NetworkType: metal.NetworkTypeLayer2Individual}

	b := twoNIC()
	ports, ok := AfterAnswer(b.ports, disbond, &answered)
	require.True(t, ok)
	d, err := Want(ports, template(equinixv1.NetworkTypeHybrid, iface("eth1", "1000")), PhaseJoined)
	require.NoError(t, err)
	assert.Equal(t, []string{"assign VLAN 1000 to eth1"}, stepStrings(Steps(ports, d, vlanIDs)),
		"after the answer only the VLAN is left")
	assert.True(t, b.port("eth1").Bonded, "the ports given are not changed")

	stale := answered
	stale.Bonded = true
	for name, tc := range map[string]struct {
		step   Step
		answer *metal.Port
	}{
		"no answer":                  {disbond, nil},
		"answered before it changed": {disbond, &stale},
		"another port's answer":      {disbond, &metal.Port{ID: "p-eth0", Bonded: false}},
		"a bulk disbond":             {Step{Op: OpDisbond, Port: "bond0", PortID: "p-bond0", Bulk: true}, &metal.Port{ID: "p-bond0"}},
		"a conversion":               {Step{Op: OpToLayer2, Port: "bond0", PortID: "p-bond0"}, &metal.Port{ID: "p-bond0", NetworkType: metal.NetworkTypeLayer2Bonded}},
	} {
		_, ok := AfterAnswer(twoNIC().ports, tc.step, tc.answer)
		assert.False(t, ok, name)
	}
}
