package virtualmedia

import (
	"context"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/bootmedia"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// The whole path through a Redfish BMC: the addon's BMC calls (what the
// BMC offers, InsertMedia, a one-time boot from Cd, power on) against the
// project's Redfish responder, whose power-on with the Cd override the
// test plays as the BMC's virtual media does: it reads the inserted image
// from its URL (the endpoint serving it) and starts the machine with it in
// the CD drive. Then the image's iPXE fetches the claim's URL with no
// DHCP, and the addon ejects its media.
func TestVirtualMediaThroughTheBMC(t *testing.T) {
	loaders := requireTools(t, true)
	ctx := context.Background()
	ep, port := startEndpoint(t)
	img, err := bootmedia.Build(bootmedia.Spec{
		Firmware: bmc.BootFirmwareUEFI, MAC: guestMAC, ChainURL: "http://" + endpointAddr + "/claims/" + claimNonce + "/boot.ipxe",
		Static: &bootmedia.StaticAddress{Address: netip.MustParsePrefix(guestAddress), Gateway: netip.MustParseAddr(guestGateway)},
	}, loaders, t.TempDir())
	require.NoError(t, err)
	ep.mu.Lock()
	ep.image = img.Path
	ep.mu.Unlock()
	imageURL := "http://127.0.0.1:" + strconv.Itoa(port) + imagePath

	sim := bmcsim.New(bmcsim.Options{Username: "admin", Password: "virtual-media-test",
		VirtualMedia: bmcsim.VirtualMediaOnManager, VirtualMediaISOSuffix: true})
	require.NoError(t, sim.SetPowerState("Off"))
	starts := make(chan bmcsim.PowerTransition, 4)
	sim.OnPowerTransition(func(p bmcsim.PowerTransition) { starts <- p })
	media := make(chan bmcsim.Media, 4)
	sim.OnMediaChange(func(slot string, m bmcsim.Media) {
		if slot == bmcsim.MediaSlotCD {
			media <- m
		}
	})
	srv, err := bmcsim.NewServer(sim, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	c, err := bmc.Dial(ctx, bmc.Endpoint{Protocol: bmc.ProtocolRedfish, Host: srv.Host, Port: srv.Port, CABundle: srv.CACertPEM,
		Username: "admin", Password: "virtual-media-test"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	mc := c.(bmc.MediaClient)

	caps, err := mc.Capabilities(ctx)
	require.NoError(t, err)
	require.True(t, caps.VirtualMedia, "%+v", caps)
	require.NoError(t, mc.InsertMedia(ctx, imageURL))
	inserted := receive(t, media, "the BMC's slot took the image")
	require.Equal(t, imageURL, inserted.Image)
	used, err := c.BootOnce(ctx, bmc.BootCD, bmc.BootFirmwareUEFI)
	require.NoError(t, err)
	assert.Equal(t, bmc.BootFirmwareUEFI, used)
	start := time.Now()
	require.NoError(t, c.Power(ctx, bmc.PowerActionOn))

	// The test's BMC plays its host: at a start from Cd it reads the
	// image from the URL it was given, as a BMC's virtual CD does, starts
	// the machine paused with an empty drive, puts the image in the drive
	// over QMP and lets the machine run.
	on := receive(t, starts, "the BMC started the host")
	require.Equal(t, "Cd", on.Boot)
	require.Equal(t, imageURL, on.Media)
	cd := fetchImage(t, on.Media)
	m := startMachine(t, "", true, port)
	qctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	q, err := dialQMP(qctx, m.qmpSocket())
	require.NoError(t, err)
	t.Cleanup(q.close)
	require.NoError(t, q.run("blockdev-change-medium", map[string]any{"id": cdDevice, "filename": cd, "format": "raw", "read-only-mode": "read-only"}, nil))
	in, err := q.cdMedium()
	require.NoError(t, err)
	require.Equal(t, cd, in)
	require.NoError(t, q.run("cont", nil, nil))

	select {
	case <-ep.got:
	case <-m.done:
		t.Fatalf("QEMU ended before the claim's URL was fetched: %v", m.err)
	case <-time.After(10 * time.Minute):
		t.Fatal("the claim's URL was not fetched within 10 minutes of power on")
	}
	t.Logf("claim URL fetched %s after the power-on command", time.Since(start).Round(time.Second))

	// The join: the addon ejects its media, and the BMC's host takes the
	// medium out of the running machine's drive.
	ejected, err := mc.EjectMedia(ctx, imageURL)
	require.NoError(t, err)
	assert.True(t, ejected)
	assert.False(t, sim.MediaIn(bmcsim.MediaSlotCD).Inserted, "no media left mounted")
	require.False(t, receive(t, media, "the BMC's slot emptied").Inserted)
	require.NoError(t, q.run("eject", map[string]any{"id": cdDevice, "force": true}, nil))
	in, err = q.cdMedium()
	require.NoError(t, err)
	assert.Empty(t, in, "the machine's drive is empty")

	m.stop()
	frames, err := countFrames(filepath.Join(m.dir, "net.pcap"))
	require.NoError(t, err)
	assert.Zero(t, frames.DHCP, "no DHCP packet on the machine's network")
	assert.Positive(t, frames.TCPTo[netip.MustParseAddrPort(endpointAddr+":80")])
}

// receive waits for the next value of ch.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("waited a minute: %s", what)
	}
	var zero T
	return zero
}

// fetchImage reads the image at url into a file, as a BMC's virtual
// media reads the URL it was given.
func fetchImage(t *testing.T, url string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "virtual-cd.iso")
	resp, err := http.Get(url) //nolint:noctx // a test's local server
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	f, err := os.Create(path)
	require.NoError(t, err)
	_, err = io.Copy(f, resp.Body)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return path
}
