package bmc

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

const bootImage = "https://10.0.0.5:8443/claims/n0nce/boot.iso"

// mediaBMC starts a Redfish BMC with opts and dials it.
func mediaBMC(t *testing.T, opts bmcsim.Options) (MediaClient, *bmcsim.BMC) {
	t.Helper()
	opts.Username, opts.Password = testUser, testPassword
	sim := bmcsim.New(opts)
	srv, err := bmcsim.NewServer(sim, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	c, err := Dial(context.Background(), Endpoint{Protocol: ProtocolRedfish, Host: srv.Host, Port: srv.Port, CABundle: srv.CACertPEM, Username: testUser, Password: testPassword})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	mc, ok := c.(MediaClient)
	require.True(t, ok, "a Redfish client is a MediaClient")
	return mc, sim
}

func TestRedfishCapabilities(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		opts           bmcsim.Options
		media, pxe, uh bool
	}{
		"media on the system, HTTP boot":            {opts: bmcsim.Options{VirtualMedia: bmcsim.VirtualMediaOnSystem, HTTPBoot: true}, media: true, pxe: true, uh: true},
		"media on the manager (iLO 5)":              {opts: bmcsim.Options{VirtualMedia: bmcsim.VirtualMediaOnManager}, media: true, pxe: true},
		"no media, UefiHttp without a URI property": {opts: bmcsim.Options{}, pxe: true},
		"media but no Cd target":                    {opts: bmcsim.Options{VirtualMedia: bmcsim.VirtualMediaOnSystem, HTTPBoot: true, BootTargets: []string{"None", "Pxe", "Hdd"}}, pxe: true},
		"HTTP boot only":                            {opts: bmcsim.Options{HTTPBoot: true, BootTargets: []string{"None", "Hdd", "UefiHttp"}}, uh: true},
	} {
		t.Run(name, func(t *testing.T) {
			c, _ := mediaBMC(t, tc.opts)
			caps, err := c.Capabilities(ctx)
			require.NoError(t, err)
			assert.Equal(t, tc.media, caps.VirtualMedia, "virtual media")
			assert.Equal(t, tc.pxe, caps.PXE, "PXE")
			assert.Equal(t, tc.uh, caps.UEFIHTTP, "UEFI HTTP")
			if tc.media {
				assert.Contains(t, caps.MediaSlot, "/VirtualMedia/"+bmcsim.MediaSlotCD, "the CD slot, not the removable-disk one listed first")
			}
		})
	}
}

// Insert, boot once from Cd, power on: the host starts from the image;
// eject removes it. Both ways BMCs insert: the action, and a PATCH.
func TestRedfishVirtualMediaBoot(t *testing.T) {
	ctx := context.Background()
	for name, opts := range map[string]bmcsim.Options{
		"actions":              {VirtualMedia: bmcsim.VirtualMediaOnSystem},
		"PATCH only (XCC)":     {VirtualMedia: bmcsim.VirtualMediaOnManager, VirtualMediaPatchOnly: true},
		"ISO names only (iLO)": {VirtualMedia: bmcsim.VirtualMediaOnManager, VirtualMediaISOSuffix: true},
	} {
		t.Run(name, func(t *testing.T) {
			c, sim := mediaBMC(t, opts)
			require.NoError(t, c.InsertMedia(ctx, bootImage))
			assert.Equal(t, bmcsim.Media{Image: bootImage, Inserted: true, WriteProtected: true}, sim.MediaIn(bmcsim.MediaSlotCD))
			assert.Equal(t, bmcsim.Media{}, sim.MediaIn(bmcsim.MediaSlotUSB))
			require.NoError(t, c.InsertMedia(ctx, bootImage), "the same image again is done")
			m, err := c.Media(ctx)
			require.NoError(t, err)
			assert.Equal(t, Media{Image: bootImage, Inserted: true}, m)

			require.NoError(t, sim.SetPowerState("Off"))
			used, err := c.(Client).BootOnce(ctx, BootCD, BootFirmwareUEFI)
			require.NoError(t, err)
			assert.Equal(t, BootFirmwareUEFI, used)
			require.NoError(t, c.(Client).Power(ctx, PowerActionOn))
			ts := sim.PowerTransitions()
			require.NotEmpty(t, ts)
			last := ts[len(ts)-1]
			assert.Equal(t, "Cd", last.Boot)
			assert.Equal(t, bootImage, last.Media, "the host started from the image")

			ejected, err := c.EjectMedia(ctx, bootImage)
			require.NoError(t, err)
			assert.True(t, ejected)
			assert.False(t, sim.MediaIn(bmcsim.MediaSlotCD).Inserted)
			ejected, err = c.EjectMedia(ctx, bootImage)
			require.NoError(t, err)
			assert.False(t, ejected, "nothing left to eject")
		})
	}
}

// Media someone else mounted is never replaced or ejected.
func TestRedfishVirtualMediaOfSomeoneElse(t *testing.T) {
	ctx := context.Background()
	c, sim := mediaBMC(t, bmcsim.Options{VirtualMedia: bmcsim.VirtualMediaOnSystem})
	const theirs = "http://files.example/harvester-v1.8.0-amd64.iso"
	sim.SetMedia(bmcsim.MediaSlotCD, theirs)
	err := c.InsertMedia(ctx, bootImage)
	assert.Equal(t, failure.Busy, failure.ClassOf(err), "%v", err)
	ejected, err := c.EjectMedia(ctx, bootImage)
	require.NoError(t, err)
	assert.False(t, ejected)
	assert.Equal(t, theirs, sim.MediaIn(bmcsim.MediaSlotCD).Image, "their media stays")
	// The same URL written with an upper-case host is the addon's own.
	sim.SetMedia(bmcsim.MediaSlotCD, "https://10.0.0.5:8443/claims/n0nce/boot.iso")
	ejected, err = c.EjectMedia(ctx, "HTTPS://10.0.0.5:8443/claims/n0nce/boot.iso")
	require.NoError(t, err)
	assert.True(t, ejected)
	assert.False(t, sameImage("https://10.0.0.5:8443/claims/other/boot.iso", bootImage))
	assert.False(t, sameImage("", bootImage))
}

func TestRedfishVirtualMediaRefusals(t *testing.T) {
	ctx := context.Background()
	none, _ := mediaBMC(t, bmcsim.Options{})
	err := none.InsertMedia(ctx, bootImage)
	assert.Equal(t, failure.Unsupported, failure.ClassOf(err), "%v", err)
	_, err = none.EjectMedia(ctx, bootImage)
	assert.Equal(t, failure.Unsupported, failure.ClassOf(err), "%v", err)

	ilo, _ := mediaBMC(t, bmcsim.Options{VirtualMedia: bmcsim.VirtualMediaOnManager, VirtualMediaISOSuffix: true})
	err = ilo.InsertMedia(ctx, "https://10.0.0.5/claims/n0nce/boot")
	assert.Equal(t, failure.Unsupported, failure.ClassOf(err), "%v", err)
	err = ilo.InsertMedia(ctx, "nfs://10.0.0.5/boot.iso")
	assert.Equal(t, failure.Invalid, failure.ClassOf(err), "%v", err)

	noCd, _ := mediaBMC(t, bmcsim.Options{VirtualMedia: bmcsim.VirtualMediaOnSystem, BootTargets: []string{"None", "Pxe"}})
	_, err = noCd.(Client).BootOnce(ctx, BootCD, BootFirmwareUEFI)
	assert.Equal(t, failure.Unsupported, failure.ClassOf(err), "%v", err)
}

func TestRedfishBootOnceHTTP(t *testing.T) {
	ctx := context.Background()
	const uri = "http://10.0.0.5:8080/claims/n0nce/ipxe.efi"
	c, sim := mediaBMC(t, bmcsim.Options{HTTPBoot: true, BootMode: "Legacy"})
	require.NoError(t, c.BootOnceHTTP(ctx, uri))
	assert.Equal(t, bmcsim.BootOverride{Target: "UefiHttp", Enabled: "Once", Mode: "UEFI", HTTPBootURI: uri}, sim.BootOverride(),
		"UEFI HTTP boot is UEFI whatever the mode was")
	require.NoError(t, c.(Client).Power(ctx, PowerActionReboot))
	ts := sim.PowerTransitions()
	require.NotEmpty(t, ts)
	assert.Equal(t, "UefiHttp", ts[len(ts)-1].Boot)
	assert.Equal(t, uri, ts[len(ts)-1].URI)

	old, _ := mediaBMC(t, bmcsim.Options{})
	err := old.BootOnceHTTP(ctx, uri)
	assert.Equal(t, failure.Unsupported, failure.ClassOf(err), "no HttpBootUri: %v", err)
	forget, _ := mediaBMC(t, bmcsim.Options{HTTPBoot: true, ForgetBootOverride: true})
	err = forget.BootOnceHTTP(ctx, uri)
	assert.Equal(t, failure.Unsupported, failure.ClassOf(err), "read back: %v", err)
	err = c.BootOnceHTTP(ctx, "tftp://10.0.0.5/ipxe.efi")
	assert.Equal(t, failure.Invalid, failure.ClassOf(err), "%v", err)
}

// posts counts the POSTs the BMC got to a path ending in suffix.
func posts(sim *bmcsim.BMC, suffix string) int {
	n := 0
	for _, r := range sim.RequestLog() {
		if strings.HasPrefix(r, "POST ") && strings.HasSuffix(r, suffix) {
			n++
		}
	}
	return n
}

// An InsertMedia whose answer is lost mounted the image all the same:
// asked again, the client finds its image and sends nothing more, and an
// eject the BMC refuses leaves the media there to eject later.
func TestRedfishVirtualMediaFaults(t *testing.T) {
	ctx := context.Background()
	c, sim := mediaBMC(t, bmcsim.Options{VirtualMedia: bmcsim.VirtualMediaOnSystem})
	const insert, eject = "/Actions/VirtualMedia.InsertMedia", "/Actions/VirtualMedia.EjectMedia"
	slot := "/redfish/v1/Systems/1/VirtualMedia/" + bmcsim.MediaSlotCD
	sim.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultLostAnswer, PathPrefix: slot + insert, Count: 1})
	err := c.InsertMedia(ctx, bootImage)
	require.Error(t, err, "the answer was lost")
	assert.True(t, sim.MediaIn(bmcsim.MediaSlotCD).Inserted, "the BMC mounted it all the same")
	require.NoError(t, c.InsertMedia(ctx, bootImage))
	assert.Equal(t, 1, posts(sim, insert), "InsertMedia reached the BMC once")

	sim.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultServerError, PathPrefix: slot + eject, Count: 1})
	ejected, err := c.EjectMedia(ctx, bootImage)
	require.Error(t, err)
	assert.False(t, ejected)
	assert.True(t, sim.MediaIn(bmcsim.MediaSlotCD).Inserted)
	ejected, err = c.EjectMedia(ctx, bootImage)
	require.NoError(t, err)
	assert.True(t, ejected)
	assert.False(t, sim.MediaIn(bmcsim.MediaSlotCD).Inserted)
}
