package metal

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func l3Ports() []Port {
	return []Port{
		{Name: "bond0", Type: PortTypeBond, Bonded: true, NetworkType: NetworkTypeLayer3},
		{Name: "eth0", Type: PortTypePhysical, Bonded: true, MAC: "0c:c4:7a:00:00:01", BondName: "bond0"},
		{Name: "eth1", Type: PortTypePhysical, Bonded: true, MAC: "0c:c4:7a:00:00:02", BondName: "bond0"},
	}
}

func TestDeviceAddresses(t *testing.T) {
	d := &Device{IPAddresses: []IPAddress{
		{Address: "2604:1380::1", AddressFamily: 6, Public: true, Management: true},
		{Address: "147.75.1.9", AddressFamily: 4, Public: true},
		{Address: "147.75.1.2", AddressFamily: 4, Public: true, Management: true},
		{Address: "10.70.1.3", AddressFamily: 4, Public: false, Management: true},
	}}
	assert.Equal(t, "147.75.1.2", d.PublicIPv4(), "the management address wins")
	assert.Equal(t, "10.70.1.3", d.PrivateIPv4())

	eipOnly := &Device{IPAddresses: []IPAddress{{Address: "147.75.1.9", AddressFamily: 4, Public: true}}}
	assert.Equal(t, "147.75.1.9", eipOnly.PublicIPv4())
	assert.Empty(t, eipOnly.PrivateIPv4())
	assert.Empty(t, (&Device{}).PublicIPv4())
}

func TestDevicePorts(t *testing.T) {
	d := &Device{Ports: l3Ports()}
	assert.Equal(t, map[string]string{"eth0": "0c:c4:7a:00:00:01", "eth1": "0c:c4:7a:00:00:02"}, d.MACs())

	p, ok := d.Port("eth1")
	assert.True(t, ok)
	assert.Equal(t, "bond0", p.BondName)
	_, ok = d.Port("eth9")
	assert.False(t, ok)

	p.VLANs = []VLANRef{{ID: "vn-1", VXLAN: 1001}, {ID: "vn-2"}}
	assert.True(t, p.HasVLAN("vn-2", 0))
	assert.True(t, p.HasVLAN("", 1001))
	assert.False(t, p.HasVLAN("vn-3", 1003))
	assert.False(t, p.HasVLAN("", 0))
}

func TestDeviceNetworkType(t *testing.T) {
	mgmt := []IPAddress{{Address: "147.75.1.2", AddressFamily: 4, Public: true, Management: true}}
	with := func(mut func([]Port)) []Port {
		ports := l3Ports()
		mut(ports)
		return ports
	}
	tests := []struct {
		name string
		dev  Device
		want NetworkType
	}{
		{name: "no ports", dev: Device{}, want: ""},
		{name: "layer3", dev: Device{Ports: l3Ports(), IPAddresses: mgmt}, want: NetworkTypeLayer3},
		{name: "layer2 bonded", dev: Device{Ports: l3Ports()}, want: NetworkTypeLayer2Bonded},
		{name: "hybrid bonded: VLANs on the layer-3 bond", dev: Device{Ports: with(func(p []Port) { p[0].VLANs = []VLANRef{{ID: "v", VXLAN: 1000}} }), IPAddresses: mgmt}, want: NetworkTypeHybridBonded},
		{name: "layer2 bonded with VLANs", dev: Device{Ports: with(func(p []Port) { p[0].VLANs = []VLANRef{{ID: "v", VXLAN: 1000}} })}, want: NetworkTypeLayer2Bonded},
		{name: "hybrid", dev: Device{Ports: with(func(p []Port) { p[2].Bonded = false }), IPAddresses: mgmt}, want: NetworkTypeHybrid},
		{name: "layer2 individual", dev: Device{Ports: with(func(p []Port) {
			for i := range p {
				p[i].Bonded = false
			}
		})}, want: NetworkTypeLayer2Individual},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.dev.NetworkType())
		})
	}
}

func TestBGPConfigEnabled(t *testing.T) {
	assert.False(t, (&BGPConfig{}).Enabled())
	assert.False(t, (&BGPConfig{ID: "x", Status: "disabled"}).Enabled())
	assert.True(t, (&BGPConfig{ID: "x", Status: "enabled"}).Enabled())
	assert.True(t, (&BGPConfig{ID: "x", Status: "requested"}).Enabled())
}

func TestDeviceDeepCopySharesNothing(t *testing.T) {
	d := &Device{
		Tags:        []string{"a"},
		Ports:       l3Ports(),
		IPAddresses: []IPAddress{{Address: "147.75.1.9"}},
		PlanDetails: &Plan{Slug: "c3.small.x86", CPUs: []PlanComponent{{Count: 1}}, Drives: []PlanDrive{{Count: 2}}, NICs: []PlanComponent{{Count: 2}}},
	}
	d.Ports[0].VLANs = []VLANRef{{ID: "v1"}}
	c := d.DeepCopy()
	assert.Equal(t, d, c)

	c.Tags[0] = "b"
	c.Ports[0].VLANs[0].ID = "v2"
	c.IPAddresses[0].Address = "x"
	c.PlanDetails.CPUs[0].Count = 9
	c.PlanDetails.Drives[0].Count = 9
	c.PlanDetails.NICs[0].Count = 9
	c.PlanDetails.Slug = "other"
	assert.Equal(t, "a", d.Tags[0])
	assert.Equal(t, "v1", d.Ports[0].VLANs[0].ID)
	assert.Equal(t, "147.75.1.9", d.IPAddresses[0].Address)
	assert.Equal(t, 1, d.PlanDetails.CPUs[0].Count)
	assert.Equal(t, 2, d.PlanDetails.Drives[0].Count)
	assert.Equal(t, 2, d.PlanDetails.NICs[0].Count)
	assert.Equal(t, "c3.small.x86", d.PlanDetails.Slug)
}
