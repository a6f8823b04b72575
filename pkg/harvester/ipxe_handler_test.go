package harvester

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func get(t *testing.T, h http.Handler, method, target string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec.Result()
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return string(data)
}

func TestIPXEHandlerServesScripts(t *testing.T) {
	install, err := InstallerScript("v1.4.1")
	require.NoError(t, err)
	single, err := SingleBootScript("v1.4.1", seedBond)
	require.NoError(t, err)
	defaults, err := SingleBootScript("v1.4.1", nil)
	require.NoError(t, err)

	tests := []struct {
		name   string
		target string
		want   string
	}{
		{name: "shell", target: "/ipxe/shell.ipxe", want: ShellScript()},
		{name: "install", target: "/ipxe/v1.4.1/install.ipxe", want: install},
		{name: "single-boot", target: "/ipxe/v1.4.1/single-boot.ipxe?mode=balance-tlb&miimon=100", want: single},
		{name: "single-boot defaults", target: "/ipxe/v1.4.1/single-boot.ipxe", want: defaults},
	}
	h := NewIPXEHandler()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := get(t, h, http.MethodGet, tc.target)
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
			assert.Equal(t, tc.want, body(t, resp))
		})
	}
}

// With a mirror the installer scripts boot the mirror's files, and only
// them; the shell script has no files to fetch.
func TestIPXEHandlerWithMirror(t *testing.T) {
	const mirror = "http://10.0.0.2/harvester"
	h := NewIPXEHandler(WithArtifactsMirror(mirror))
	for _, target := range []string{"/ipxe/v1.4.1/install.ipxe", "/ipxe/v1.4.1/single-boot.ipxe?mode=balance-tlb"} {
		resp := get(t, h, http.MethodGet, target)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		script := body(t, resp)
		assert.Contains(t, script, "kernel "+mirror+"/v1.4.1/harvester-v1.4.1-vmlinuz-amd64 ")
		assert.Contains(t, script, "root=live:"+mirror+"/v1.4.1/harvester-v1.4.1-rootfs-amd64.squashfs ")
		assert.Contains(t, script, "initrd "+mirror+"/v1.4.1/harvester-v1.4.1-initrd-amd64\n")
		assert.NotContains(t, script, "github.com")
		assert.NotContains(t, script, "releases.rancher.com")
	}
	assert.Equal(t, ShellScript(), body(t, get(t, h, http.MethodGet, "/ipxe/shell.ipxe")))
}

func TestIPXEHandlerServesWhatInstallerScriptURLNames(t *testing.T) {
	const base = "http://203.0.113.5:8080"
	want, err := SingleBootScript("v1.5.0-rc2", seedBond)
	require.NoError(t, err)
	u, err := InstallerScriptURL(base, "v1.5.0-rc2", "single-boot", seedBond)
	require.NoError(t, err)

	resp := get(t, NewIPXEHandler(), http.MethodGet, strings.TrimPrefix(u, base))
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, want, body(t, resp))
}

func TestIPXEHandlerErrors(t *testing.T) {
	tests := []struct {
		name   string
		method string
		target string
		status int
	}{
		{name: "master version", method: http.MethodGet, target: "/ipxe/master/install.ipxe", status: http.StatusNotFound},
		{name: "non-semver version", method: http.MethodGet, target: "/ipxe/latest/single-boot.ipxe", status: http.StatusNotFound},
		{name: "unknown script", method: http.MethodGet, target: "/ipxe/v1.4.1/other.ipxe", status: http.StatusNotFound},
		{name: "unknown path", method: http.MethodGet, target: "/metrics", status: http.StatusNotFound},
		{name: "nested path", method: http.MethodGet, target: "/ipxe/v1.4.1/x/install.ipxe", status: http.StatusNotFound},
		{name: "unknown bond mode", method: http.MethodGet, target: "/ipxe/v1.4.1/single-boot.ipxe?mode=lacp", status: http.StatusBadRequest},
		{name: "injected bond value", method: http.MethodGet, target: "/ipxe/v1.4.1/single-boot.ipxe?mode=active-backup%0Ashell", status: http.StatusBadRequest},
		{name: "repeated bond option", method: http.MethodGet, target: "/ipxe/v1.4.1/single-boot.ipxe?mode=balance-tlb&mode=active-backup", status: http.StatusBadRequest},
		{name: "POST", method: http.MethodPost, target: "/ipxe/v1.4.1/install.ipxe", status: http.StatusMethodNotAllowed},
	}
	h := NewIPXEHandler()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := get(t, h, tc.method, tc.target)
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.NotContains(t, body(t, resp), "#!ipxe")
		})
	}
}

func TestIPXEHandlerHEAD(t *testing.T) {
	resp := get(t, NewIPXEHandler(), http.MethodHead, "/ipxe/v1.4.1/install.ipxe")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}
