package netboot

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// netbootTools is where scripts/netboot-tools unpacks dhcpd and kea-dhcp4
// (scripts/test exports it; the default is its tools cache).
func netbootTools() string {
	if d := os.Getenv("NETBOOT_TOOLS_DIR"); d != "" {
		return d
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "harvester-equinix-addon", "netboot-tools")
}

// checker returns an unpacked server binary, skipping the test (failing
// it under CI=true) when it is not there.
func checker(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(netbootTools(), "usr", "sbin", name)
	if _, err := os.Stat(bin); err != nil {
		msg := name + " is not unpacked (scripts/netboot-tools does it): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// The page's ISC dhcpd configuration passes dhcpd's own check.
func TestDocumentedDhcpdConfigurationIsValid(t *testing.T) {
	bin := checker(t, "dhcpd")
	conf := filepath.Join(t.TempDir(), "dhcpd.conf")
	require.NoError(t, os.WriteFile(conf, []byte(documented(t, "dhcpd")), 0o600))
	out, err := exec.Command(bin, "-t", "-4", "-cf", conf).CombinedOutput()
	require.NoError(t, err, "dhcpd -t refused the page's configuration:\n%s", out)
}

// The page's Kea configuration passes kea-dhcp4's own check, which also
// wants the interface it names to exist: it runs in the test's management
// network, whose bridge is named as the page's interface.
func TestDocumentedKeaConfigurationIsValid(t *testing.T) {
	bin := checker(t, "kea-dhcp4")
	requireTools(t)
	conf := filepath.Join(t.TempDir(), "kea-dhcp4.conf")
	require.NoError(t, os.WriteFile(conf, []byte(documented(t, "kea")), 0o600))
	out, err := exec.Command("ip", "netns", "exec", newLAN(t).ns, bin, "-t", conf).CombinedOutput()
	require.NoError(t, err, "kea-dhcp4 -t refused the page's configuration:\n%s", out)
}

// The page's ISC dhcpd and Kea configurations serve a UEFI machine for
// real, as the page's dnsmasq does: by its architecture they hand its
// firmware the iPXE binary, which it fetches from the page's TFTP-only
// dnsmasq, and they hand that iPXE the chain URL, which ends at the boot
// endpoint. dhcpd keeps its leases and pid file in the test's folder; Kea,
// which keeps them where its package would (/var/lib/kea, /run/kea), gets
// empty folders there in a mount namespace of its own.
func TestDocumentedDhcpdAndKeaServeTheChain(t *testing.T) {
	for i, server := range []string{"dhcpd", "kea"} {
		t.Run(server, func(t *testing.T) {
			bin := checker(t, map[string]string{"dhcpd": "dhcpd", "kea": "kea-dhcp4"}[server])
			requireTools(t, dnsmasqBin, filepath.Join(ipxeDir, "snponly.efi"), ovmfCode, ovmfVars)
			l := newLAN(t)
			e := serveEndpoint(t, l)
			tftp := t.TempDir()
			copyFile(t, filepath.Join(ipxeDir, "snponly.efi"), filepath.Join(tftp, "snponly-x86_64.efi"))
			_, tftpLog := dnsmasq(t, l.ns, t.TempDir(), withTFTPRoot(t, documented(t, "tftp"), tftp))
			dir := t.TempDir()
			conf := filepath.Join(dir, server+".conf")
			require.NoError(t, os.WriteFile(conf, []byte(documented(t, server)), 0o600))
			var p *process
			switch server {
			case "dhcpd":
				leases := filepath.Join(dir, "dhcpd.leases")
				require.NoError(t, os.WriteFile(leases, nil, 0o600))
				p = startIn(t, l.ns, dir, server, bin, "-d", "-4", "-cf", conf, "-lf", leases, "-pf", filepath.Join(dir, "dhcpd.pid"), pageInterface)
			case "kea":
				p = startIn(t, l.ns, dir, server, "sh", "-c",
					"mount -t tmpfs tmpfs /run && mount -t tmpfs tmpfs /var/lib && mkdir -p /run/kea /var/lib/kea && exec \"$0\" -c \"$1\"", bin, conf)
			}

			mac, uuid := fmt.Sprintf("52:54:00:38:01:%02x", i+1), fmt.Sprintf("38a0f4c2-6b1d-4e2f-9c3a-0000000001%02x", i+1)
			e.claim(fmt.Sprintf("3f9c2a10-7d4e-4b8a-a1c5-38d0c50001%02x", i+1), mac, uuid)
			m := bootMachine(t, l, uefi, mac, uuid)
			a, err := harvester.ArtifactsFrom(endpointURL+mirrorPath, version)
			require.NoError(t, err)
			kernelPath := strings.TrimPrefix(a.KernelURL, endpointURL)
			require.Eventually(t, func() bool { return e.served(kernelPath) || m.gaveUp() || p.exited() }, 5*time.Minute, 200*time.Millisecond)
			require.True(t, e.served(kernelPath), "the machine never fetched the installer's kernel; endpoint requests %+v\n%s's output:\n%s\nTFTP log:\n%s\n%s",
				e.requests(), server, tail(p.output(), 4000), tail(readFile(tftpLog), 2000), m.describe())
			first := e.requests()[0]
			assert.Equal(t, bootendpoint.ChainPath, first.path)
			assert.Equal(t, http.StatusOK, first.status)
			assert.Regexp(t, `sent \S*/snponly-x86_64\.efi to 192\.168\.10\.`, readFile(tftpLog), "the firmware fetched iPXE over TFTP")
		})
	}
}
