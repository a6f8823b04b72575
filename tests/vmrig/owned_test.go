package vmrig

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint/claimstest"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

const (
	ownedToken = "K10vmrig-join-token::server:0123456789abcdef"
	claimID    = "0b4f2e8a-29aa-4c1e-9b0d-5e6f7a8b9c0d"
)

// ownedEndpoint serves the boot endpoint of owned servers with claims,
// its installer pointed at an artifacts mirror on the same server that
// holds a HaltingKernel and an initrd.
func ownedEndpoint(t *testing.T, key []byte, claims bootendpoint.Claims) http.Handler {
	t.Helper()
	mirror, err := ArtifactsMirror(mirrorPath, version)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/boot/", bootendpoint.NewHandler(key, claims, bootendpoint.WithArtifactsMirror(GuestURL+mirrorPath)))
	mux.Handle(mirrorPath+"/", mirror)
	return mux
}

// A claimed server of one's own, powered through its BMC with a
// one-time network boot, boots with real iPXE into the boot endpoint by
// the fixed chain URL a DHCP server hands out: iPXE fills in its MAC and
// SMBIOS UUID, gets the installer of the claim's version, fetches its
// kernel and initrd, and boots the kernel with the configuration URL
// that carries the claim's nonce, which answers the configuration (the
// installer's part, played here by the test). A server of another MAC,
// booting the same way, gets 404 and nothing else, and the
// configuration URL with its MAC serves nothing.
func TestOwnedServerBootsIntoTheEndpoint(t *testing.T) {
	ctx := context.Background()
	key := bytes.Repeat([]byte{0x29}, bootendpoint.KeySize)
	claims := claimstest.New(claimstest.Join{ServerURL: "192.168.0.10", Token: ownedToken, InstallDevice: "/dev/sda",
		PasswordHash: "$6$vmrigsalt$" + strings.Repeat("a", 86)})
	endpoint := ownedEndpoint(t, key, claims)
	chain := bootendpoint.ChainPath + bootendpoint.ChainQuery
	nonce := bootendpoint.Nonce(key, claimID)
	a, err := harvester.ArtifactsFrom(GuestURL+mirrorPath, version)
	require.NoError(t, err)

	m := Require(t, Options{MAC: vmMAC, UUID: vmUUID, Handler: endpoint, BootFile: chain})
	c := dial(ctx, t, m)
	// The claim holds the UUID as the server's BMC reports it, as the
	// pool's claim does.
	inv, err := c.Inventory(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, inv.SystemUUID)
	claims.Add(claimstest.Claim{Claim: bootendpoint.Claim{ID: claimID, Instance: "owned-a-7kq2x", Server: "rack1-u07",
		MAC: vmMAC, SystemUUID: inv.SystemUUID, Version: version}})
	boot(ctx, t, c, m, func() bool { _, ok := KernelCommandLine(m.Serial()); return ok })
	reqs := m.Requests()
	var urls []string
	for _, r := range reqs {
		urls = append(urls, r.URL())
		assert.Equal(t, http.StatusOK, r.Status, r.URL())
	}
	assert.Equal(t, []string{
		"/boot/ipxe?mac=52%3A54%3A00%3A29%3A00%3A01&uuid=" + vmUUID,
		strings.TrimPrefix(a.KernelURL, GuestURL),
		strings.TrimPrefix(a.InitrdURL, GuestURL),
	}, urls, "the exact URLs real iPXE requested, and nothing else")
	cmdline, _ := KernelCommandLine(m.Serial())
	configURL := GuestURL + "/boot/" + nonce + "/config.yaml?mac=" + vmMAC
	assert.Contains(t, strings.Fields(cmdline), "harvester.install.config_url="+configURL, cmdline)
	assert.Contains(t, strings.Fields(cmdline), "root=live:"+a.RootfsURL)
	assert.Empty(t, claims.Refusals())

	// The installer's request, which a VM here cannot make.
	code, body := fetch(t, endpoint, configURL)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, ownedToken)
	assert.Contains(t, body, `hwAddr: "`+vmMAC+`"`)
	// Another MAC asking with the same nonce.
	code, body = fetch(t, endpoint, GuestURL+"/boot/"+nonce+"/config.yaml?mac=52:54:00:29:00:02")
	assert.Equal(t, http.StatusNotFound, code)
	assert.NotContains(t, body, ownedToken)
	assert.Equal(t, 1, claims.ConfigsServed(vmMAC))

	t.Run("another MAC", func(t *testing.T) {
		const other = "52:54:00:29:00:02"
		o := Require(t, Options{MAC: other, UUID: vmUUID, Handler: endpoint, BootFile: chain})
		boot(ctx, t, dial(ctx, t, o), o, func() bool { return len(o.Requests()) > 0 && strings.Contains(o.Serial(), "No bootable device") })
		oreqs := o.Requests()
		require.Len(t, oreqs, 1, "iPXE asked for the chain URL and, refused, for nothing else: %+v", oreqs)
		assert.Equal(t, "/boot/ipxe?mac=52%3A54%3A00%3A29%3A00%3A02&uuid="+vmUUID, oreqs[0].URL())
		assert.Equal(t, http.StatusNotFound, oreqs[0].Status)
		assert.NotContains(t, o.Serial(), nonce)
		assert.Equal(t, []claimstest.Refusal{{MAC: "52:54:00:29:00:02", Reason: "BootNoOpenClaim"}, {MAC: other, Reason: "BootNoOpenClaim"}}, claims.Refusals())
		assert.Equal(t, 0, claims.ConfigsServed(other))
	})
}

// dial is the project's client of m's BMC, the test's one session to it.
func dial(ctx context.Context, t *testing.T, m *Machine) bmc.Client {
	t.Helper()
	c, err := bmc.Dial(ctx, m.Endpoint)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// boot powers m on through c with a one-time network boot, waits until
// done says the boot got as far as it goes, and powers it off.
func boot(ctx context.Context, t *testing.T, c bmc.Client, m *Machine, done func() bool) {
	t.Helper()
	_, err := c.BootOnce(ctx, bmc.BootNetwork, bmc.BootFirmwareLegacy)
	require.NoError(t, err)
	on := time.Now()
	require.NoError(t, c.Power(ctx, bmc.PowerActionOn))
	waitFor(t, "the boot", 120*time.Second, done)
	t.Logf("power on -> done %v, QEMU CPU %v", time.Since(on).Round(time.Millisecond), m.CPU())
	require.NoError(t, c.Power(ctx, bmc.PowerActionOff))
	waitFor(t, "the VM stops", 30*time.Second, func() bool { return m.HostPID() == 0 })
}

// fetch asks h for rawURL as the installer would.
func fetch(t *testing.T, h http.Handler, rawURL string) (int, string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, u.RequestURI(), nil))
	return rec.Code, rec.Body.String()
}
