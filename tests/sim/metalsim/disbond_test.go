package metalsim

import (
	"testing"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// metal-cli's `port convert --layer2 --bonded=false` disbonds bond0 while it
// is still layer 3 and only then converts it, and its end-to-end tests ran
// that against the live API; `--layer2=false --bonded` bonds first, then
// converts back.
func TestDisbondALayer3BondThenConvert(t *testing.T) {
	e := newEnv(t, withTimings(func() Timings { tm := DefaultTimings(); tm.PortConversion = 0; return tm }()))
	d := e.createActive("node-1")
	n := netClient{env: e, deviceID: d.GetId()}
	bond0 := n.portID("bond0")

	p, _, err := e.client.PortsApi.DisbondPort(e.ctx, bond0).BulkDisable(true).Execute()
	require.NoError(t, err, "the live API accepted it")
	assert.False(t, p.Data.GetBonded())
	dev := n.dev()
	for _, name := range []string{"eth0", "eth1"} {
		assert.False(t, e.port(dev, name).Data.GetBonded(), name)
	}
	assert.Len(t, dev.IpAddresses, 3, "the bond keeps its addresses until it is converted")
	net, err := e.sim.DeviceNetwork(d.GetId())
	require.NoError(t, err)
	assert.Equal(t, string(metalv1.PORTNETWORKTYPE_LAYER2_INDIVIDUAL), net.Type)

	_, _, err = e.client.PortsApi.ConvertLayer2(e.ctx, bond0).PortAssignInput(metalv1.PortAssignInput{}).Execute()
	require.NoError(t, err)
	assert.Empty(t, n.dev().IpAddresses)
	assert.Equal(t, metalv1.PORTNETWORKTYPE_LAYER2_INDIVIDUAL, n.getPort(bond0).GetNetworkType())

	n.bond("bond0", true)
	_, _, err = e.client.PortsApi.ConvertLayer3(e.ctx, bond0).Execute()
	require.NoError(t, err)
	dev = n.dev()
	assert.Equal(t, metalv1.PORTNETWORKTYPE_LAYER3, e.port(dev, "bond0").GetNetworkType())
	assert.Len(t, dev.IpAddresses, 3)
}
