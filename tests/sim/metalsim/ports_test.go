package metalsim

import (
	"bytes"
	"fmt"
	"net/http"
	"path"
	"strconv"
	"testing"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// netClient drives port changes the way a client of the API had to,
// re-reading ports after every step and waiting out delayed conversions.
type netClient struct {
	*env
	deviceID string
}

func (n netClient) dev() *metalv1.Device { return n.get(n.deviceID) }

func (n netClient) portID(name string) string { return n.port(n.dev(), name).GetId() }

func (n netClient) bond(name string, bulk bool) {
	n.t.Helper()
	_, _, err := n.client.PortsApi.BondPort(n.ctx, n.portID(name)).BulkEnable(bulk).Execute()
	require.NoError(n.t, err)
}

func (n netClient) disbond(name string, bulk bool) {
	n.t.Helper()
	_, _, err := n.client.PortsApi.DisbondPort(n.ctx, n.portID(name)).BulkDisable(bulk).Execute()
	require.NoError(n.t, err)
}

func (n netClient) assign(name, vnid string) {
	n.t.Helper()
	_, _, err := n.client.PortsApi.AssignPort(n.ctx, n.portID(name)).PortAssignInput(metalv1.PortAssignInput{Vnid: ptr(vnid)}).Execute()
	require.NoError(n.t, err)
}

func (n netClient) unassign(name, vnid string) {
	n.t.Helper()
	_, _, err := n.client.PortsApi.UnassignPort(n.ctx, n.portID(name)).PortAssignInput(metalv1.PortAssignInput{Vnid: ptr(vnid)}).Execute()
	require.NoError(n.t, err)
}

// convert calls convert/layer-2 or layer-3 on a bond, checks that the
// answer still shows the old type (the real API answered early) and polls
// until the new one shows.
func (n netClient) convert(name string, layer2 bool) {
	n.t.Helper()
	id := n.portID(name)
	before := n.getPort(id).GetNetworkType()
	var got *metalv1.Port
	var err error
	if layer2 {
		got, _, err = n.client.PortsApi.ConvertLayer2(n.ctx, id).PortAssignInput(metalv1.PortAssignInput{}).Execute()
	} else {
		got, _, err = n.client.PortsApi.ConvertLayer3(n.ctx, id).PortConvertLayer3Input(metalv1.PortConvertLayer3Input{
			RequestIps: []metalv1.PortConvertLayer3InputRequestIpsInner{
				{AddressFamily: ptr(int32(4)), Public: ptr(true)},
				{AddressFamily: ptr(int32(4)), Public: ptr(false)},
				{AddressFamily: ptr(int32(6)), Public: ptr(true)},
			},
		}).Execute()
	}
	require.NoError(n.t, err)
	assert.Equal(n.t, before, got.GetNetworkType(), "the conversion lands after the answer")
	assert.Equal(n.t, before, n.getPort(id).GetNetworkType())
	n.clock.Advance(DefaultTimings().PortConversion)
	assert.NotEqual(n.t, before, n.getPort(id).GetNetworkType())
}

func (n netClient) bondNames() []string {
	var out []string
	for _, p := range n.dev().NetworkPorts {
		if p.GetType() == metalv1.PORTTYPE_NETWORK_BOND_PORT {
			out = append(out, p.GetName())
		}
	}
	return out
}

// toLayer3: unassign all VLANs, bond each bond port, convert bond0 if it is
// layer2*, bond each eth.
func (n netClient) toLayer3() {
	for _, p := range n.dev().NetworkPorts {
		for _, v := range p.VirtualNetworks {
			n.unassign(p.GetName(), path.Base(v.GetHref()))
		}
	}
	for _, b := range n.bondNames() {
		n.bond(b, false)
	}
	if bond0 := n.getPort(n.portID("bond0")); bond0.GetNetworkType() == metalv1.PORTNETWORKTYPE_LAYER2_BONDED ||
		bond0.GetNetworkType() == metalv1.PORTNETWORKTYPE_LAYER2_INDIVIDUAL {
		n.convert("bond0", false)
	}
	for _, p := range n.dev().NetworkPorts {
		if p.GetType() == metalv1.PORTTYPE_NETWORK_PORT && !p.Data.GetBonded() {
			n.bond(p.GetName(), false)
		}
	}
}

func (n netClient) to(target string, vlanID string) {
	n.t.Helper()
	fourNIC := len(n.bondNames()) == 2
	switch target {
	case "hybrid":
		n.disbond("eth1", false)
		if fourNIC {
			n.disbond("eth3", false)
		}
		n.assign("eth1", vlanID)
	case "hybrid-bonded":
		n.assign("bond0", vlanID)
	case "layer2-bonded":
		n.convert("bond0", true)
		for _, p := range n.dev().NetworkPorts {
			if p.GetType() == metalv1.PORTTYPE_NETWORK_PORT && !p.Data.GetBonded() {
				n.bond(p.GetName(), false)
			}
		}
		n.assign("bond0", vlanID)
	case "layer2-individual":
		n.convert("bond0", true)
		for _, b := range n.bondNames() {
			n.disbond(b, true)
		}
		n.assign("eth0", vlanID)
		n.assign("eth1", vlanID)
	case "layer3":
		n.toLayer3()
	}
}

func (e *env) createVLAN(metro string, vxlan int32) *metalv1.VirtualNetwork {
	e.t.Helper()
	in := metalv1.VirtualNetworkCreateInput{Metro: ptr(metro), Description: ptr("test")}
	if vxlan != 0 {
		in.Vxlan = ptr(vxlan)
	}
	v, resp, err := e.client.VLANsApi.CreateVirtualNetwork(e.ctx, testProject).VirtualNetworkCreateInput(in).Execute()
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusCreated, resp.StatusCode)
	return v
}

func addresses(d *metalv1.Device) []string {
	var out []string
	for _, a := range d.IpAddresses {
		out = append(out, a.GetAddress())
	}
	return out
}

func TestNetworkTypeConversions(t *testing.T) {
	tests := []struct {
		target    string
		wantBond0 metalv1.PortNetworkType
		wantEth1  metalv1.PortNetworkType
		wantIPs   bool
	}{
		{"hybrid", metalv1.PORTNETWORKTYPE_HYBRID, metalv1.PORTNETWORKTYPE_HYBRID, true},
		{"hybrid-bonded", metalv1.PORTNETWORKTYPE_HYBRID_BONDED, metalv1.PORTNETWORKTYPE_HYBRID_BONDED, true},
		{"layer2-bonded", metalv1.PORTNETWORKTYPE_LAYER2_BONDED, metalv1.PORTNETWORKTYPE_LAYER2_BONDED, false},
		{"layer2-individual", metalv1.PORTNETWORKTYPE_LAYER2_INDIVIDUAL, metalv1.PORTNETWORKTYPE_LAYER2_INDIVIDUAL, false},
		{"layer3", metalv1.PORTNETWORKTYPE_LAYER3, metalv1.PORTNETWORKTYPE_LAYER3, true},
	}
	for _, plan := range []string{"c3.small.x86", "n3.xlarge.x86"} {
		for _, tt := range tests {
			t.Run(plan+"/"+tt.target, func(t *testing.T) {
				e := newEnv(t)
				v := e.createVLAN("da", 1001)
				d := e.createActive("node-1", func(in *metalv1.DeviceCreateInMetroInput) { in.Plan = plan })
				original := addresses(d)
				require.Len(t, original, 3)
				n := netClient{env: e, deviceID: d.GetId()}
				assertNetwork(t, n, "layer3", metalv1.PORTNETWORKTYPE_LAYER3, metalv1.PORTNETWORKTYPE_LAYER3)

				n.to(tt.target, v.GetId())
				assertNetwork(t, n, tt.target, tt.wantBond0, tt.wantEth1)
				assert.Equal(t, tt.wantIPs, len(n.dev().IpAddresses) > 0)

				n.to("layer3", "")
				assertNetwork(t, n, "layer3", metalv1.PORTNETWORKTYPE_LAYER3, metalv1.PORTNETWORKTYPE_LAYER3)
				back := addresses(n.dev())
				require.Len(t, back, 3)
				if !tt.wantIPs {
					for _, a := range back {
						assert.NotContains(t, original, a, "returning to layer 3 allocates new addresses")
					}
				}
			})
		}
	}
}

func assertNetwork(t *testing.T, n netClient, deviceType string, bond0, eth1 metalv1.PortNetworkType) {
	t.Helper()
	d := n.dev()
	assert.Equal(t, bond0, n.port(d, "bond0").GetNetworkType())
	assert.Equal(t, eth1, n.port(d, "eth1").GetNetworkType())
	ns, err := n.sim.DeviceNetwork(d.GetId())
	require.NoError(t, err)
	assert.Equal(t, deviceType, ns.Type)
}

func TestPortShape(t *testing.T) {
	e := newEnv(t)
	d := e.createActive("node-1", func(in *metalv1.DeviceCreateInMetroInput) { in.Plan = "n3.xlarge.x86" })
	var names []string
	macs := map[string]bool{}
	for _, p := range d.NetworkPorts {
		names = append(names, p.GetName())
		assert.Equal(t, "/metal/v1/ports/"+p.GetId(), p.GetHref())
		assert.True(t, p.Data.GetBonded())
		if p.GetType() == metalv1.PORTTYPE_NETWORK_BOND_PORT {
			assert.False(t, p.Data.HasMac())
			assert.Nil(t, p.Bond)
			continue
		}
		require.True(t, p.Data.HasMac())
		macs[p.Data.GetMac()] = true
		assert.Equal(t, e.port(d, p.Bond.GetName()).GetId(), p.Bond.GetId())
	}
	assert.Equal(t, []string{"bond0", "eth0", "eth1", "bond1", "eth2", "eth3"}, names)
	assert.Len(t, macs, 4)
	assert.Equal(t, metalv1.PORTNETWORKTYPE_LAYER3, e.port(d, "bond0").GetNetworkType())
	assert.Equal(t, metalv1.PORTNETWORKTYPE_LAYER2_BONDED, e.port(d, "bond1").GetNetworkType(),
		"bond1 carries no addresses (terraform-provider-packet #306)")

	other := e.createActive("node-2")
	for _, p := range other.NetworkPorts {
		if p.Data.HasMac() {
			assert.False(t, macs[p.Data.GetMac()], "MACs are unique across devices")
		}
	}
	again := e.get(d.GetId())
	assert.Equal(t, e.port(d, "eth2").Data.GetMac(), e.port(again, "eth2").Data.GetMac(), "MACs are stable")
}

func TestPortQuirks(t *testing.T) {
	tm := DefaultTimings()
	tm.PortConversion = 0
	e := newEnv(t, withTimings(tm))
	v1 := e.createVLAN("da", 1001)
	v2 := e.createVLAN("da", 1002)
	d := e.createActive("node-1")
	n := netClient{env: e, deviceID: d.GetId()}
	bond0 := n.portID("bond0")
	ports := e.client.PortsApi

	t.Run("converting an L3 bond to L3", func(t *testing.T) {
		_, resp, err := ports.ConvertLayer3(e.ctx, bond0).Execute()
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "bond0 is already layer3")
	})
	t.Run("VLAN on a bonded eth", func(t *testing.T) {
		_, resp, err := ports.AssignPort(e.ctx, n.portID("eth1")).PortAssignInput(metalv1.PortAssignInput{Vnid: ptr("1001")}).Execute()
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "is bonded")
	})
	t.Run("native VLAN on an L3 bond", func(t *testing.T) {
		n.assign("bond0", "1001")
		n.assign("bond0", v2.GetId())
		_, resp, err := ports.AssignNativeVlan(e.ctx, bond0).Vnid("1001").Execute()
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "Layer 3")
	})
	t.Run("disbonding a hybrid-bonded bond", func(t *testing.T) {
		_, resp, err := ports.DisbondPort(e.ctx, n.portID("eth1")).Execute()
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "Unassign the VLANs of bond0")
	})
	t.Run("converting a bond with VLANs to L3", func(t *testing.T) {
		n.convert2(bond0)
		_, resp, err := ports.ConvertLayer3(e.ctx, bond0).Execute()
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "VLANs must be unassigned")
	})
	t.Run("converting an L2 bond to L2", func(t *testing.T) {
		_, resp, err := ports.ConvertLayer2(e.ctx, bond0).PortAssignInput(metalv1.PortAssignInput{}).Execute()
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "bond0 is already configured for Layer 2")
	})
	t.Run("native VLAN", func(t *testing.T) {
		p, _, err := ports.AssignNativeVlan(e.ctx, bond0).Vnid(v1.GetId()).Include([]string{"native_virtual_network"}).Execute()
		require.NoError(t, err)
		assert.Equal(t, int32(1001), p.NativeVirtualNetwork.GetVxlan())
		p, _, err = ports.DeleteNativeVlan(e.ctx, bond0).Execute()
		require.NoError(t, err)
		assert.Nil(t, p.NativeVirtualNetwork)
	})
	t.Run("unassigning a VLAN that is not assigned", func(t *testing.T) {
		n.unassign("bond0", "1002")
		_, resp, err := ports.UnassignPort(e.ctx, bond0).PortAssignInput(metalv1.PortAssignInput{Vnid: ptr("1002")}).Execute()
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "not assigned")
	})
	t.Run("native VLAN needs two VLANs", func(t *testing.T) {
		_, resp, err := ports.AssignNativeVlan(e.ctx, bond0).Vnid("1001").Execute()
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "at least two")
	})
	t.Run("VLAN of another metro", func(t *testing.T) {
		am := e.createVLAN("am", 1001)
		_, resp, err := ports.AssignPort(e.ctx, bond0).PortAssignInput(metalv1.PortAssignInput{Vnid: ptr(am.GetId())}).Execute()
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "metro am")
	})
	t.Run("frozen network", func(t *testing.T) {
		_, _, err := e.client.DevicesApi.UpdateDevice(e.ctx, d.GetId()).
			DeviceUpdateInput(metalv1.DeviceUpdateInput{NetworkFrozen: ptr(true)}).Execute()
		require.NoError(t, err)
		_, resp, err := ports.BondPort(e.ctx, bond0).Execute()
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "frozen")
	})
}

// convert2 converts a bond to layer 2 with immediate conversions.
func (n netClient) convert2(id string) {
	n.t.Helper()
	_, _, err := n.client.PortsApi.ConvertLayer2(n.ctx, id).PortAssignInput(metalv1.PortAssignInput{}).Execute()
	require.NoError(n.t, err)
}

func TestVLANsShowOnPortsAndInstances(t *testing.T) {
	e := newEnv(t)
	v := e.createVLAN("da", 0)
	d := e.createActive("node-1")
	n := netClient{env: e, deviceID: d.GetId()}
	n.assign("bond0", strconv.Itoa(int(v.GetVxlan())))

	bare := n.port(e.get(d.GetId()), "bond0")
	require.Len(t, bare.VirtualNetworks, 1)
	assert.Equal(t, "/metal/v1/virtual-networks/"+v.GetId(), bare.VirtualNetworks[0].GetHref())
	assert.Zero(t, bare.VirtualNetworks[0].GetVxlan())

	full := n.port(e.get(d.GetId(), "network_ports.virtual_networks"), "bond0")
	assert.Equal(t, v.GetVxlan(), full.VirtualNetworks[0].GetVxlan())
	assert.Equal(t, "da", full.VirtualNetworks[0].GetMetroCode())

	got, _, err := e.client.VLANsApi.GetVirtualNetwork(e.ctx, v.GetId()).Execute()
	require.NoError(t, err)
	require.Len(t, got.Instances, 1)
	assert.Equal(t, "/metal/v1/devices/"+d.GetId(), got.Instances[0].GetHref())
}

// packngo sent a JSON body to bond/disbond while the SDK sends none; both
// must work, so this test speaks plain HTTP.
func TestBondAcceptsAJSONBody(t *testing.T) {
	e := newEnv(t)
	d := e.createActive("node-1")
	eth1 := e.port(d, "eth1").GetId()
	for _, op := range []string{"disbond", "bond"} {
		url := fmt.Sprintf("%s%s/ports/%s/%s", e.srv.URL, apiPrefix, eth1, op)
		req, err := http.NewRequestWithContext(e.ctx, http.MethodPost, url, bytes.NewBufferString(`{"bulk_enable":false}`))
		require.NoError(t, err)
		req.Header.Set("X-Auth-Token", testToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, http.StatusOK, resp.StatusCode, op)
	}
	assert.True(t, e.getPort(eth1).Data.GetBonded())
}
