package metal_test

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// Network, address, BGP and catalog calls against the simulator.

func TestSimPortOperations(t *testing.T) {
	e := newSimEnv(t, metalsim.Timings{})
	d := e.activeDevice(t, "node-1")
	bond0, _ := d.Port("bond0")
	eth1, _ := d.Port("eth1")

	// Converting to the layer the bond is in is success, with no port.
	answer, err := e.client.ConvertLayer3(e.ctx, bond0.ID)
	require.NoError(t, err)
	assert.Nil(t, answer)
	assert.Equal(t, []int{422}, statuses(e.sim.RequestsFor(metalsim.OpConvertLayer3)))

	v1, err := e.client.CreateVLAN(e.ctx, metal.CreateVLANRequest{Metro: "da", VXLAN: 1001, Description: "harvester"})
	require.NoError(t, err)
	v2, err := e.client.CreateVLAN(e.ctx, metal.CreateVLANRequest{Metro: "da"})
	require.NoError(t, err)

	// Hybrid: eth1 out of the bond, VLANs on eth1. The disbond answers
	// with the port as it is now.
	answer, err = e.client.DisbondPort(e.ctx, eth1.ID, false)
	require.NoError(t, err)
	require.NotNil(t, answer)
	assert.Equal(t, eth1.ID, answer.ID)
	assert.False(t, answer.Bonded)
	require.NoError(t, e.client.AssignVLAN(e.ctx, eth1.ID, v1.ID))
	require.NoError(t, e.client.AssignVLAN(e.ctx, eth1.ID, v1.ID), "assigning twice is success")
	require.NoError(t, e.client.AssignVLAN(e.ctx, eth1.ID, fmt.Sprint(v2.VXLAN)), "by VXLAN number")
	port, err := e.client.GetPort(e.ctx, eth1.ID)
	require.NoError(t, err)
	assert.False(t, port.Bonded)
	assert.True(t, port.HasVLAN(v1.ID, 0))
	assert.True(t, port.HasVLAN("", 1001), "VLANs are expanded with their VXLAN")
	assert.True(t, port.HasVLAN(v2.ID, 0))
	dev, err := e.client.GetDevice(e.ctx, d.ID)
	require.NoError(t, err)
	assert.Equal(t, metal.NetworkTypeHybrid, dev.NetworkType())
	devEth1, _ := dev.Port("eth1")
	assert.True(t, devEth1.HasVLAN(v1.ID, 1001), "GetDevice carries the ports' VLANs")

	require.NoError(t, e.client.AssignNativeVLAN(e.ctx, eth1.ID, v1.ID))
	port, err = e.client.GetPort(e.ctx, eth1.ID)
	require.NoError(t, err)
	assert.Equal(t, v1.ID, port.NativeVLANID)
	require.NoError(t, e.client.RemoveNativeVLAN(e.ctx, eth1.ID))
	port, err = e.client.GetPort(e.ctx, eth1.ID)
	require.NoError(t, err)
	assert.Empty(t, port.NativeVLANID)

	require.NoError(t, e.client.UnassignVLAN(e.ctx, eth1.ID, v1.ID))
	require.NoError(t, e.client.UnassignVLAN(e.ctx, eth1.ID, v1.ID), "unassigning what is not assigned is success")
	assert.Equal(t, []int{200, 422}, statuses(e.sim.RequestsFor(metalsim.OpUnassignPort)))
	require.NoError(t, e.client.UnassignVLAN(e.ctx, eth1.ID, v2.ID))
	require.NoError(t, second(e.client.BondPort(e.ctx, eth1.ID, false)))
	dev, err = e.client.GetDevice(e.ctx, d.ID)
	require.NoError(t, err)
	assert.Equal(t, metal.NetworkTypeLayer3, dev.NetworkType())

	// Layer 2 and back: the second conversion of each kind is success.
	require.NoError(t, second(e.client.ConvertLayer2(e.ctx, bond0.ID)))
	require.NoError(t, second(e.client.ConvertLayer2(e.ctx, bond0.ID)))
	assert.Equal(t, []int{200, 422}, statuses(e.sim.RequestsFor(metalsim.OpConvertLayer2)))
	dev, err = e.client.GetDevice(e.ctx, d.ID)
	require.NoError(t, err)
	assert.Equal(t, metal.NetworkTypeLayer2Bonded, dev.NetworkType())
	assert.Empty(t, dev.PublicIPv4(), "layer 2 drops the addresses")

	require.NoError(t, second(e.client.DisbondPort(e.ctx, bond0.ID, true)))
	dev, err = e.client.GetDevice(e.ctx, d.ID)
	require.NoError(t, err)
	assert.Equal(t, metal.NetworkTypeLayer2Individual, dev.NetworkType())
	require.NoError(t, second(e.client.BondPort(e.ctx, bond0.ID, true)))

	require.NoError(t, second(e.client.ConvertLayer3(e.ctx, bond0.ID)))
	dev, err = e.client.GetDevice(e.ctx, d.ID)
	require.NoError(t, err)
	assert.Equal(t, metal.NetworkTypeLayer3, dev.NetworkType())
	assert.NotEmpty(t, dev.PublicIPv4(), "layer 3 brings new addresses")

	// A real refusal is not swallowed.
	require.NoError(t, second(e.client.DisbondPort(e.ctx, eth1.ID, false)))
	require.NoError(t, e.client.AssignVLAN(e.ctx, eth1.ID, v1.ID))
	err = e.client.DeleteVLAN(e.ctx, v1.ID)
	require.Error(t, err)
	assert.Equal(t, failure.Invalid, failure.ClassOf(err), err.Error())
	require.NoError(t, e.client.UnassignVLAN(e.ctx, eth1.ID, v1.ID))
}

func TestSimVLANs(t *testing.T) {
	e := newSimEnv(t, metalsim.Timings{})
	v, err := e.client.CreateVLAN(e.ctx, metal.CreateVLANRequest{Metro: "da", VXLAN: 1500, Description: "storage", Tags: []string{"cluster:test"}})
	require.NoError(t, err)
	assert.Equal(t, 1500, v.VXLAN)
	assert.Equal(t, "da", v.Metro)
	assert.Equal(t, "storage", v.Description)

	_, err = e.client.CreateVLAN(e.ctx, metal.CreateVLANRequest{Metro: "da", VXLAN: 1500})
	require.Error(t, err)
	assert.Equal(t, failure.Invalid, failure.ClassOf(err), "a VXLAN is unique per metro")

	list, err := e.client.ListVLANs(e.ctx, "da")
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, v.ID, list[0].ID)
	assert.Zero(t, list[0].AssignedDevices)

	got, err := e.client.GetVLAN(e.ctx, v.ID)
	require.NoError(t, err)
	assert.Equal(t, 1500, got.VXLAN)

	require.NoError(t, e.client.DeleteVLAN(e.ctx, v.ID))
	_, err = e.client.GetVLAN(e.ctx, v.ID)
	assert.True(t, metal.IsNotFound(err))
	list, err = e.client.ListVLANs(e.ctx, "")
	require.NoError(t, err)
	assert.Empty(t, list)
}

func TestSimElasticIP(t *testing.T) {
	e := newSimEnv(t, metalsim.Timings{})
	d := e.activeDevice(t, "node-1")

	res, err := e.client.ReserveIPs(e.ctx, metal.ReserveIPsRequest{Metro: "da", Tags: []string{"eip:vip"}})
	require.NoError(t, err)
	assert.Equal(t, metal.IPReservationPublicIPv4, res.Type)
	assert.Equal(t, 32, res.CIDR)
	assert.NotEmpty(t, res.Address)

	list, err := e.client.ListIPReservations(e.ctx, metal.ListIPReservationsOptions{Tag: "eip:vip", Types: []string{metal.IPReservationPublicIPv4}})
	require.NoError(t, err)
	require.Len(t, list, 1, "only the tagged reservation, not the devices' management blocks")
	assert.Equal(t, res.ID, list[0].ID)

	a, err := e.client.AssignIP(e.ctx, d.ID, res.Address+"/32")
	require.NoError(t, err)
	assert.Equal(t, res.Address, a.Address)
	assert.Equal(t, d.ID, a.DeviceID)

	ips, err := e.client.ListDeviceIPs(e.ctx, d.ID)
	require.NoError(t, err)
	assert.Contains(t, addresses(ips), res.Address)

	got, err := e.client.GetIPReservation(e.ctx, res.ID)
	require.NoError(t, err)
	require.Len(t, got.Assignments, 1)
	assert.Equal(t, a.ID, got.Assignments[0].ID)

	require.NoError(t, e.client.UnassignIP(e.ctx, a.ID))
	require.NoError(t, e.client.ReleaseIPReservation(e.ctx, res.ID))
	_, err = e.client.GetIPReservation(e.ctx, res.ID)
	assert.True(t, metal.IsNotFound(err), "%v", err)
}

func addresses(ips []metal.IPAddress) []string {
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, ip.Address)
	}
	return out
}

func TestSimBGP(t *testing.T) {
	e := newSimEnv(t, metalsim.Timings{})
	d := e.activeDevice(t, "node-1")

	cfg, err := e.client.GetBGPConfig(e.ctx)
	require.NoError(t, err)
	assert.False(t, cfg.Enabled())

	require.NoError(t, e.client.CreateBGPConfig(e.ctx, metal.BGPConfigRequest{ASN: 65000, DeploymentType: metal.BGPDeploymentLocal}))
	require.NoError(t, e.client.CreateBGPConfig(e.ctx, metal.BGPConfigRequest{ASN: 65000}), "enabling twice is success")
	assert.Equal(t, []int{422}, statuses(e.sim.RequestsFor(metalsim.OpRequestBgpConfig))[1:])
	cfg, err = e.client.GetBGPConfig(e.ctx)
	require.NoError(t, err)
	assert.True(t, cfg.Enabled())
	assert.Equal(t, int64(65000), cfg.ASN)

	require.NoError(t, e.client.CreateBGPSession(e.ctx, d.ID, metal.BGPSessionRequest{}))
	require.NoError(t, e.client.CreateBGPSession(e.ctx, d.ID, metal.BGPSessionRequest{AddressFamily: "ipv4"}), "a duplicate session is success")
	assert.Equal(t, []int{201, 422}, statuses(e.sim.RequestsFor(metalsim.OpCreateBgpSession)))

	neighbors, err := e.client.ListBGPNeighbors(e.ctx, d.ID)
	require.NoError(t, err)
	require.NotEmpty(t, neighbors)
	assert.NotEmpty(t, neighbors[0].PeerIPs)
	assert.NotZero(t, neighbors[0].PeerAS)
}

func TestSimPlans(t *testing.T) {
	e := newSimEnv(t, metalsim.Timings{})
	plans, err := e.client.ListPlans(e.ctx)
	require.NoError(t, err)
	var found *metal.Plan
	for i := range plans {
		if plans[i].Slug == "c3.small.x86" {
			found = &plans[i]
		}
	}
	require.NotNil(t, found)
	assert.NotEmpty(t, found.CPUs)
	assert.NotEmpty(t, found.Memory)
	assert.NotEmpty(t, found.NICs)
}

func TestSimMetricsLatency(t *testing.T) {
	e := newSimEnv(t, metalsim.Timings{})
	_, err := e.client.ListPlans(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, 1.0, e.count(t, metal.OpListPlans, "200"))
	assert.Equal(t, 1, testutil.CollectAndCount(e.reg, "equinix_addon_metal_api_request_duration_seconds"))
}

// second is the error of a call that also returns a value.
func second[T any](_ T, err error) error { return err }
