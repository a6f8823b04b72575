package bmcdriver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
)

// A Redfish BMC's virtual media and UEFI HTTP boot go through the pass's
// one session; someone else's media is Busy in the BMC's own words (the
// chain tells it from a BMC that cannot be reached), and the eject leaves
// an image the addon did not insert.
func TestMachineVirtualMedia(t *testing.T) {
	sim := bmcsim.New(bmcsim.Options{Username: user, Password: password, VirtualMedia: bmcsim.VirtualMediaOnSystem, HTTPBoot: true})
	srv, err := bmcsim.NewServer(sim, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	ep := bmc.Endpoint{Protocol: bmc.ProtocolRedfish, Host: srv.Host, Port: srv.Port, CABundle: srv.CACertPEM,
		Username: user, Password: password, Timeout: 2 * time.Second}
	ctx := context.Background()
	d := New(Options{})
	t.Cleanup(d.Close)
	m := d.Machine(ep, MachineOptions{Owner: "o", Key: "uid-1", Interval: time.Hour})
	defer m.Release(0)

	offer, err := m.BootOffer(ctx)
	require.NoError(t, err)
	assert.Equal(t, bmc.ProtocolRedfish, offer.Protocol)
	assert.True(t, offer.Capabilities.VirtualMedia)
	assert.True(t, offer.Capabilities.UEFIHTTP)

	const image = "http://10.0.0.1:8080/boot/n/media.iso?mac=52:54:00:00:00:01"
	require.NoError(t, m.InsertMedia(ctx, image))
	_, err = m.BootOnce(ctx, bmc.BootCD, bmc.BootFirmwareUEFI)
	require.NoError(t, err)
	assert.Equal(t, "Cd", sim.BootOverride().Target)
	ejected, err := m.EjectMedia(ctx, image)
	require.NoError(t, err)
	assert.True(t, ejected)
	require.NoError(t, m.BootOnceHTTP(ctx, image))
	assert.Equal(t, image, sim.BootOverride().HTTPBootURI)

	const theirs = "http://images.example.lan/theirs.iso"
	sim.SetMedia(bmcsim.MediaSlotCD, theirs)
	err = m.InsertMedia(ctx, image)
	require.Error(t, err)
	assert.Equal(t, failure.Busy, BMCClass(err))
	ejected, err = m.EjectMedia(ctx, image)
	require.NoError(t, err)
	assert.False(t, ejected)
	assert.Equal(t, theirs, sim.MediaIn(bmcsim.MediaSlotCD).Image)
	assert.Equal(t, 1, sim.Sessions(), "one session for every call")
}

// An IPMI BMC offers a network boot only; virtual media is Unsupported
// in the BMC's own class, and nothing is sent.
func TestMachineIPMIOffersPXEOnly(t *testing.T) {
	sim := ipmisim.Require(t, ipmisim.Options{Username: user, Password: password})
	ep := bmc.Endpoint{Protocol: bmc.ProtocolIPMI, Host: sim.Host, Port: sim.Port, Username: user, Password: password, Timeout: 2 * time.Second}
	d := New(Options{})
	t.Cleanup(d.Close)
	m := d.Machine(ep, MachineOptions{Owner: "o", Key: "uid-1", Interval: time.Hour})
	defer m.Release(0)
	offer, err := m.BootOffer(context.Background())
	require.NoError(t, err)
	assert.Equal(t, bmc.ProtocolIPMI, offer.Protocol)
	assert.Equal(t, bmc.Capabilities{PXE: true}, offer.Capabilities)
	err = m.InsertMedia(context.Background(), "http://10.0.0.1/boot/n/media.iso")
	assert.Equal(t, failure.Unsupported, BMCClass(err))
	assert.Empty(t, sim.ChassisControls())
}
