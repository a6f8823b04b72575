package virtualmedia

import (
	"context"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/bootmedia"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/qemubmc"
)

// The whole path through a Redfish BMC whose host is a QEMU machine: the
// addon's BMC calls (what the BMC offers, InsertMedia of the image's URL,
// a one-time boot from Cd, power on) against the test BMC, which starts
// the machine itself at the power-on, reads the image from the URL it was
// given and puts it in the machine's CD drive over QMP. The image's iPXE
// then fetches the claim's URL with no DHCP; the eject takes the medium
// out of the running machine, and ForceOff ends it.
func TestVirtualMediaThroughTheBMC(t *testing.T) {
	loaders := requireTools(t, true)
	ctx := context.Background()
	ep, port := startEndpoint(t)
	serveStaticImage(t, ep, loaders)
	// The URL names the endpoint as the machine reaches it: the test BMC
	// maps it to the endpoint's port here.
	imageURL := "http://" + endpointAddr + imagePath

	b := startQMPBMC(t, port)
	c, mc := dialBMC(t, b)

	caps, err := mc.Capabilities(ctx)
	require.NoError(t, err)
	require.True(t, caps.VirtualMedia, "%+v", caps)
	require.NoError(t, mc.InsertMedia(ctx, imageURL))
	used, err := c.BootOnce(ctx, bmc.BootCD, bmc.BootFirmwareUEFI)
	require.NoError(t, err)
	assert.Equal(t, bmc.BootFirmwareUEFI, used)
	start := time.Now()
	require.NoError(t, c.Power(ctx, bmc.PowerActionOn))

	waitForClaimFetch(t, ep, b, "power on")
	t.Logf("claim URL fetched %s after the power-on command", time.Since(start).Round(time.Second))
	lives := b.Lives()
	require.Len(t, lives, 1)
	assert.Equal(t, "Cd", lives[0].Boot)
	assert.Equal(t, imageURL, lives[0].Image, "the machine booted the image the BMC mounted")
	require.Eventually(t, func() bool { return strings.Contains(lives[0].Serial(), chainedMarker+" 10.0.2.15") },
		2*time.Minute, 200*time.Millisecond, "the chained script runs with the static address")

	// The join: the addon ejects its media, and the BMC takes the medium
	// out of the running machine's drive; then the power goes off.
	ejected, err := mc.EjectMedia(ctx, imageURL)
	require.NoError(t, err)
	assert.True(t, ejected)
	assert.False(t, b.Sim.MediaIn(bmcsim.MediaSlotCD).Inserted, "no media left mounted")
	require.NoError(t, c.Power(ctx, bmc.PowerActionOff))
	require.Eventually(t, func() bool { return !b.Running() }, time.Minute, 100*time.Millisecond, "ForceOff ends the machine")
	require.NoError(t, b.Err())
	lives = b.Lives()
	assert.Equal(t, []string{"blockdev-change-medium", "cont", "eject", "quit"}, lives[0].QMP,
		"the image went in before the machine ran, out at the eject, and the power-off ended it")

	assertNoDHCP(t, lives[0], "no DHCP packet on the machine's network")
}

// A BMC told to mount media while its host runs puts the medium in the
// running machine's drive; a restart with a one-time boot from Cd then
// boots it: the restart reads the override and the drive afresh. Before
// it, the machine started with no override boots nothing from its empty
// drive, and its firmware asks the network for nothing.
func TestVirtualMediaInsertedWhileOnBootsAtTheRestart(t *testing.T) {
	loaders := requireTools(t, true)
	ctx := context.Background()
	ep, port := startEndpoint(t)
	serveStaticImage(t, ep, loaders)
	imageURL := "http://" + endpointAddr + imagePath
	b := startQMPBMC(t, port)
	c, mc := dialBMC(t, b)

	require.NoError(t, c.Power(ctx, bmc.PowerActionOn))
	require.Eventually(t, func() bool { return running(b) }, time.Minute, 100*time.Millisecond, "the power-on started the machine")
	// OVMF finds nothing to boot in the empty drive and stops in its
	// shell; the console says so.
	require.Eventually(t, func() bool { return strings.Contains(b.Lives()[0].Serial(), "Shell>") }, 5*time.Minute, 200*time.Millisecond,
		"the machine started from nothing reached the firmware's shell")
	require.NoError(t, mc.InsertMedia(ctx, imageURL))
	require.Eventually(t, func() bool { return slices.Contains(b.Lives()[0].QMP, "blockdev-change-medium") }, time.Minute, 100*time.Millisecond,
		"the media reached the running machine's drive")
	_, err := c.BootOnce(ctx, bmc.BootCD, bmc.BootFirmwareUEFI)
	require.NoError(t, err)
	require.NoError(t, c.Power(ctx, bmc.PowerActionReboot))

	waitForClaimFetch(t, ep, b, "the restart")
	lives := b.Lives()
	require.Len(t, lives, 1, "one machine: the restart reset it")
	assert.Equal(t, []string{"eject", "cont", "blockdev-change-medium", "blockdev-change-medium", "system_reset"}, lives[0].QMP,
		"started empty, the medium in while running, then in again for the restart from Cd")
	assert.Equal(t, "Cd", lives[0].Boot)
	assert.Equal(t, imageURL, lives[0].Image)

	require.NoError(t, c.Power(ctx, bmc.PowerActionOff))
	require.Eventually(t, func() bool { return !b.Running() }, time.Minute, 100*time.Millisecond, "ForceOff ends the machine")
	assertNoDHCP(t, lives[0], "no DHCP packet on the machine's network, before the restart or after")
}

// waitForClaimFetch waits until the endpoint served the claim's URL, or
// the BMC failed to carry out what it was told (a failed test then says
// which).
func waitForClaimFetch(t *testing.T, ep *endpoint, b *qemubmc.BMC, since string) {
	t.Helper()
	require.Eventually(t, func() bool {
		select {
		case <-ep.got:
			return true
		default:
			return b.Err() != nil
		}
	}, 10*time.Minute, 100*time.Millisecond, "the claim's URL was not fetched within 10 minutes of %s", since)
	require.NoError(t, b.Err(), "the BMC carries out what it is told")
}

// assertNoDHCP checks a machine's capture: not one DHCP packet, and TCP
// to the boot endpoint.
func assertNoDHCP(t *testing.T, life qemubmc.Life, msg string) {
	t.Helper()
	frames, err := qemubmc.CountFrames(life.Capture(), time.Time{})
	require.NoError(t, err)
	assert.Zero(t, frames.DHCP, msg)
	assert.Positive(t, frames.TCPTo[netip.MustParseAddrPort(endpointAddr+":80")])
}

func running(b *qemubmc.BMC) bool {
	lives := b.Lives()
	return b.Running() && len(lives) == 1 && slices.Contains(lives[0].QMP, "cont")
}

// startQMPBMC starts the test BMC of a QEMU machine with the guest's MAC
// and UUID, whose image URLs naming the endpoint's guest address are
// read from the endpoint's port here.
func startQMPBMC(t *testing.T, port int) *qemubmc.BMC {
	t.Helper()
	hw := bmcsim.DefaultHardware()
	hw.UUID = guestUUID
	b, err := qemubmc.New(qemubmc.Options{
		BMC: bmcsim.Options{Username: "admin", Password: "virtual-media-test", Hardware: &hw,
			VirtualMedia: bmcsim.VirtualMediaOnManager, VirtualMediaISOSuffix: true},
		MAC: guestMAC, Dir: t.TempDir(),
		Guest: netip.MustParseAddrPort(endpointAddr + ":80"), Host: "127.0.0.1:" + strconv.Itoa(port),
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range b.Lives() {
				t.Logf("QMP %v; serial console of %s (end):\n%s", l.QMP, l.Dir, tail(l.Serial(), 3000))
			}
		}
		_ = b.Close()
	})
	return b
}

// dialBMC is the addon's client of the test BMC.
func dialBMC(t *testing.T, b *qemubmc.BMC) (bmc.Client, bmc.MediaClient) {
	t.Helper()
	c, err := bmc.Dial(context.Background(), bmc.Endpoint{Protocol: bmc.ProtocolRedfish, Host: b.Server.Host, Port: b.Server.Port,
		CABundle: b.Server.CACertPEM, Username: "admin", Password: "virtual-media-test"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, c.(bmc.MediaClient)
}

// serveStaticImage builds the UEFI image of the guest's claim, with its
// static address, and has the endpoint serve it at imagePath.
func serveStaticImage(t *testing.T, ep *endpoint, loaders *bootmedia.Loaders) {
	t.Helper()
	img, err := bootmedia.Build(bootmedia.Spec{
		Firmware: bmc.BootFirmwareUEFI, MAC: guestMAC, ChainURL: "http://" + endpointAddr + "/claims/" + claimNonce + "/boot.ipxe",
		Static: &bootmedia.StaticAddress{Address: netip.MustParsePrefix(guestAddress), Gateway: netip.MustParseAddr(guestGateway)},
	}, loaders, t.TempDir())
	require.NoError(t, err)
	ep.mu.Lock()
	ep.image = img.Path
	ep.mu.Unlock()
}
