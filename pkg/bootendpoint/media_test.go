package bootendpoint

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/bootmedia"
	"github.com/harvester/harvester-equinix-addon/pkg/bootmedia/bootmediatest"
)

func mediaHandler(t *testing.T, c *claims) (http.Handler, *handler) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, bootmedia.FileEFIARM64), bootmediatest.EFIApp(bootmediatest.MachineARM64), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, bootmedia.FileEFIAMD64), bootmediatest.EFIApp(bootmediatest.MachineAMD64), 0o600))
	loaders, err := LoadBootMedia(dir)
	require.NoError(t, err)
	var h *handler
	mux := NewHandler(testKey, c, WithBaseURL("http://10.1.0.2:8081"), WithBootMedia(loaders, t.TempDir()), func(x *handler) { h = x })
	return mux, h
}

// A claim's image is served at its nonce URL, whole and in ranges from one
// and the same image, chaining to the endpoint; the whole read is told as
// a step of the claim.
func TestServesTheClaimsBootImage(t *testing.T) {
	c := newClaims(claimUUID)
	mux, _ := mediaHandler(t, c)
	path := MediaPath(testKey, c.open[claimMAC])
	code, iso := get(t, mux, path)
	require.Equal(t, http.StatusOK, code)
	require.Greater(t, len(iso), 0x8006)
	assert.Equal(t, "CD001", iso[0x8001:0x8006], "an ISO 9660 volume")
	assert.Contains(t, iso, "chain http://10.1.0.2:8081/boot/ipxe?mac=", "the script chains to the endpoint")
	assert.Equal(t, []string{claimMAC + " " + FileMedia}, c.served)

	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Range", "bytes=32768-34815")
	mux.ServeHTTP(rec, req)
	require.Equal(t, http.StatusPartialContent, rec.Code)
	assert.Equal(t, iso[32768:34816], rec.Body.String(), "a range of the same image")
	assert.Len(t, c.served, 1, "a range read is the same download")
	assert.Empty(t, c.refused)
}

// The image is the claim's only: another nonce, a closed claim, or an
// endpoint without loaders answer nothing.
func TestBootImageRefusals(t *testing.T) {
	c := newClaims(claimUUID)
	mux, _ := mediaHandler(t, c)
	other := Claim{ID: "another-claim", MAC: claimMAC}
	code, _ := get(t, mux, MediaPath(testKey, other))
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, []string{claimMAC + " " + equinixv1.ReasonBootNonceMismatch}, c.refused)

	path := MediaPath(testKey, c.open[claimMAC])
	c.close(claimMAC)
	code, _ = get(t, mux, path)
	assert.Equal(t, http.StatusNotFound, code)

	c = newClaims(claimUUID)
	code, _ = get(t, NewHandler(testKey, c), MediaPath(testKey, c.open[claimMAC]))
	assert.Equal(t, http.StatusNotFound, code, "no loaders, no images")

	_, err := LoadBootMedia(filepath.Join(t.TempDir(), "absent"))
	assert.ErrorIs(t, err, ErrNoBootMedia)
}

// The images are bounded: with every place taken by an image being read, a
// new claim is asked to come back; once one has been idle a minute, its
// place is taken.
func TestBootImagesAreBounded(t *testing.T) {
	c := newClaims(claimUUID)
	mux, h := mediaHandler(t, c)
	now := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	h.media.now = func() time.Time { return now }
	for i := 0; i < MaxMediaImages+1; i++ {
		mac := fmt.Sprintf("0c:c4:7a:29:01:%02x", i)
		c.open[mac] = Claim{ID: fmt.Sprintf("claim-%d", i), Instance: "i", Server: "s", MAC: mac, Arch: "amd64", Version: "v1.5.0"}
	}
	for i := 0; i < MaxMediaImages; i++ {
		mac := fmt.Sprintf("0c:c4:7a:29:01:%02x", i)
		code, _ := get(t, mux, MediaPath(testKey, c.open[mac]))
		require.Equal(t, http.StatusOK, code, mac)
	}
	last := c.open[fmt.Sprintf("0c:c4:7a:29:01:%02x", MaxMediaImages)]
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, MediaPath(testKey, last), nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "30", rec.Header().Get("Retry-After"))

	now = now.Add(2 * mediaBusy)
	code, _ := get(t, mux, MediaPath(testKey, last))
	assert.Equal(t, http.StatusOK, code)
	files, err := os.ReadDir(h.media.dir)
	require.NoError(t, err)
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f.Name(), ".iso") {
			n++
		}
	}
	assert.Equal(t, MaxMediaImages, n, "an image dropped leaves no file")
}

// An image read no more gives its place at once: its claim closed, or its
// server's iPXE fetched the installer script.
func TestBootImagesReadNoMoreGiveTheirPlace(t *testing.T) {
	c := newClaims(claimUUID)
	mux, _ := mediaHandler(t, c)
	claim := func(i int) Claim {
		mac := fmt.Sprintf("0c:c4:7a:29:02:%02x", i)
		c.open[mac] = Claim{ID: fmt.Sprintf("claim-%d", i), Instance: "i", Server: "s", MAC: mac, Arch: "amd64", Version: "v1.5.0"}
		return c.open[mac]
	}
	for i := 0; i < MaxMediaImages; i++ {
		code, _ := get(t, mux, MediaPath(testKey, claim(i)))
		require.Equal(t, http.StatusOK, code)
	}
	code, _ := get(t, mux, MediaPath(testKey, claim(MaxMediaImages)))
	require.Equal(t, http.StatusServiceUnavailable, code, "every place is taken by an image being read")

	code, _ = get(t, mux, ChainPath+"?mac="+claim(3).MAC+"&uuid=")
	require.Equal(t, http.StatusOK, code, "the installer script of a server that booted its image")
	code, _ = get(t, mux, MediaPath(testKey, claim(MaxMediaImages)))
	assert.Equal(t, http.StatusOK, code, "the booted server's image gave its place")

	c.close(claim(5).MAC)
	code, _ = get(t, mux, MediaPath(testKey, claim(MaxMediaImages+1)))
	assert.Equal(t, http.StatusOK, code, "the closed claim's image gave its place")
	code, _ = get(t, mux, MediaPath(testKey, claim(MaxMediaImages+2)))
	assert.Equal(t, http.StatusServiceUnavailable, code, "no place free again")
}
