package netboot

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/vmrig"
)

// The iPXE binaries of Debian's ipxe package, under the names the page's
// configurations hand out.
var tftpFiles = map[string]string{
	"undionly.kpxe":      "undionly.kpxe",
	"snponly-x86_64.efi": "snponly.efi",
}

// siteDHCP is the DHCP server a proxy DHCP runs beside: addresses only.
const siteDHCP = `port=0
interface=eth0
dhcp-range=192.168.10.100,192.168.10.200,12h
`

// A machine of each firmware boots from the network of each documented
// dnsmasq configuration and ends at the boot endpoint with its own MAC
// and SMBIOS UUID: legacy BIOS through its NIC's iPXE ROM, which DHCP
// hands the chain URL; UEFI through its own PXE client, which DHCP hands
// the iPXE binary over TFTP, which DHCP then hands the chain URL. The
// endpoint answers the claim's installer, whose kernel iPXE fetches from
// the mirror (and, under legacy BIOS, boots with the claim's configuration
// URL). As a proxy DHCP, dnsmasq runs beside another DHCP server that
// hands out the addresses.
func TestDocumentedDnsmasqChainsToTheEndpoint(t *testing.T) {
	for i, tc := range []struct {
		block string
		fw    firmware
	}{
		{"dnsmasq", legacyBIOS},
		{"dnsmasq", uefi},
		{"dnsmasq-proxy", legacyBIOS},
		{"dnsmasq-proxy", uefi},
	} {
		t.Run(tc.block+" with "+string(tc.fw), func(t *testing.T) {
			files := []string{dnsmasqBin, filepath.Join(ipxeDir, "undionly.kpxe"), filepath.Join(ipxeDir, "snponly.efi")}
			if tc.fw == uefi {
				files = append(files, ovmfCode, ovmfVars)
			} else {
				files = append(files, virtioROM)
			}
			requireTools(t, files...)
			mac, uuid := fmt.Sprintf("52:54:00:38:00:%02x", i+1), fmt.Sprintf("38a0f4c2-6b1d-4e2f-9c3a-0000000000%02x", i+1)
			bootsToTheEndpoint(t, tc.block, tc.fw, mac, uuid)
		})
	}
}

func bootsToTheEndpoint(t *testing.T, block string, fw firmware, mac, uuid string) {
	l := newLAN(t)
	e := serveEndpoint(t, l)
	tftp := t.TempDir()
	for name, file := range tftpFiles {
		copyFile(t, filepath.Join(ipxeDir, file), filepath.Join(tftp, name))
	}
	if strings.HasSuffix(block, "-proxy") {
		site := l.site(t, "192.168.10.1")
		dnsmasq(t, site, t.TempDir(), siteDHCP)
	}
	_, logPath := dnsmasq(t, l.ns, t.TempDir(), withTFTPRoot(t, documented(t, block), tftp))

	const id = "3f9c2a10-7d4e-4b8a-a1c5-38d0c5000001"
	e.claim(id, mac, uuid)
	a, err := harvester.ArtifactsFrom(endpointURL+mirrorPath, version)
	require.NoError(t, err)
	kernelPath := strings.TrimPrefix(a.KernelURL, endpointURL)

	start := time.Now()
	m := bootMachine(t, l, fw, mac, uuid)
	// Under TCG on a shared machine OVMF alone takes a minute or more.
	if !assert.Eventually(t, func() bool { return e.served(kernelPath) || m.gaveUp() }, 5*time.Minute, 200*time.Millisecond) ||
		!e.served(kernelPath) {
		t.Fatalf("the machine never fetched the installer's kernel; endpoint requests %+v\ndnsmasq's log:\n%s\n%s",
			e.requests(), tail(readFile(logPath), 4000), m.describe())
	}
	t.Logf("%s: power on -> the installer's kernel fetched in %v", fw, time.Since(start).Round(time.Millisecond))

	reqs := e.requests()
	require.NotEmpty(t, reqs)
	first := reqs[0]
	assert.Equal(t, bootendpoint.ChainPath, first.path, "the first request is the chain URL: %+v", reqs)
	q, err := url.ParseQuery(first.rawQuery)
	require.NoError(t, err)
	assert.Equal(t, mac, q.Get("mac"), "iPXE filled in the MAC of the NIC it booted from")
	assert.Equal(t, uuid, strings.ToLower(q.Get("uuid")), "iPXE filled in the SMBIOS UUID")
	assert.Equal(t, http.StatusOK, first.status, "the endpoint served the claim's script")
	assert.Empty(t, e.claims.Refusals())

	dhcpLog := readFile(logPath)
	assert.Contains(t, dhcpLog, endpointURL+bootendpoint.ChainPath+bootendpoint.ChainQuery, "dnsmasq handed iPXE the chain URL")
	if fw == uefi {
		assert.Regexp(t, `sent \S*/snponly-x86_64\.efi to 192\.168\.10\.`, dhcpLog, "UEFI's PXE client fetched iPXE over TFTP")
		return
	}
	// Legacy BIOS boots the kernel, which prints what it was given.
	var cmdline string
	require.Eventually(t, func() bool {
		var ok bool
		cmdline, ok = vmrig.KernelCommandLine(m.console())
		return ok
	}, 2*time.Minute, 200*time.Millisecond, "the kernel never ran\n%s", m.describe())
	assert.Contains(t, strings.Fields(cmdline), "harvester.install.config_url="+endpointURL+"/boot/"+nonceOf(id)+"/config.yaml?mac="+mac, cmdline)
}

// Under Secure Boot with Microsoft's keys (the default of most servers),
// UEFI fetches the unsigned iPXE binary the documented configuration hands
// out and refuses to run it: the boot endpoint is never asked, which is
// what docs/network-boot.md tells a user to look for, and why it says to
// turn Secure Boot off for the install.
func TestSecureBootRefusesUnsignedIPXE(t *testing.T) {
	requireTools(t, dnsmasqBin, filepath.Join(ipxeDir, "snponly.efi"), ovmfSecureCode, ovmfSecureVars)
	l := newLAN(t)
	e := serveEndpoint(t, l)
	tftp := t.TempDir()
	copyFile(t, filepath.Join(ipxeDir, "snponly.efi"), filepath.Join(tftp, "snponly-x86_64.efi"))
	_, logPath := dnsmasq(t, l.ns, t.TempDir(), withTFTPRoot(t, documented(t, "dnsmasq"), tftp))
	const mac, uuid = "52:54:00:38:00:10", "38a0f4c2-6b1d-4e2f-9c3a-000000000010"
	e.claim("3f9c2a10-7d4e-4b8a-a1c5-38d0c5000010", mac, uuid)

	m := bootMachine(t, l, uefiSecureBoot, mac, uuid)
	sent := regexp.MustCompile(`sent \S*/snponly-x86_64\.efi to 192\.168\.10\.`)
	require.Eventually(t, func() bool { return sent.MatchString(readFile(logPath)) || m.gaveUp() }, 5*time.Minute, 200*time.Millisecond,
		"the firmware never fetched iPXE\n%s", m.describe())
	// What the firmware says of an unsigned binary, before it goes on to
	// its next boot option.
	require.Eventually(t, func() bool { return strings.Contains(m.console(), "Access Denied") || m.gaveUp() }, 5*time.Minute,
		200*time.Millisecond, "the firmware never refused iPXE\n%s", m.describe())
	assert.Contains(t, m.console(), "Access Denied", m.describe())
	for _, line := range strings.Split(m.console(), "\n") {
		if strings.Contains(line, "Access Denied") {
			t.Logf("the firmware: %s", strings.TrimSpace(line))
		}
	}
	assert.Empty(t, e.requests(), "the endpoint never hears of the server")
}

// existingPXEServer is a site's PXE server that runs iPXE already: every
// iPXE client gets the one script pool.ipxe over TFTP, as a menu or a
// script per MAC would be handed out.
const existingPXEServer = `port=0
interface=eth1
dhcp-range=192.168.10.100,192.168.10.200,12h
enable-tftp
tftp-root=/srv/tftp
dhcp-boot=pool.ipxe
`

// The page's entry for a PXE server that runs iPXE already, as the script
// it hands the pool's servers: a legacy BIOS machine, whose NIC's ROM is
// iPXE, fetches it over TFTP, runs it, and ends at the boot endpoint with
// its own MAC and SMBIOS UUID and the claim's installer.
func TestDocumentedIPXEEntryChainsToTheEndpoint(t *testing.T) {
	requireTools(t, dnsmasqBin, virtioROM)
	l := newLAN(t)
	e := serveEndpoint(t, l)
	tftp := t.TempDir()
	// dnsmasq's TFTP serves only files anyone may read, as os.Create makes.
	script, err := os.Create(filepath.Join(tftp, "pool.ipxe"))
	require.NoError(t, err)
	_, err = script.WriteString(documented(t, "ipxe-entry"))
	require.NoError(t, errors.Join(err, script.Close()))
	_, logPath := dnsmasq(t, l.ns, t.TempDir(), withTFTPRoot(t, existingPXEServer, tftp))

	const id, mac, uuid = "3f9c2a10-7d4e-4b8a-a1c5-38d0c5000002", "52:54:00:38:00:21", "38a0f4c2-6b1d-4e2f-9c3a-000000000021"
	e.claim(id, mac, uuid)
	a, err := harvester.ArtifactsFrom(endpointURL+mirrorPath, version)
	require.NoError(t, err)
	kernelPath := strings.TrimPrefix(a.KernelURL, endpointURL)

	m := bootMachine(t, l, legacyBIOS, mac, uuid)
	if !assert.Eventually(t, func() bool { return e.served(kernelPath) || m.gaveUp() }, 5*time.Minute, 200*time.Millisecond) ||
		!e.served(kernelPath) {
		t.Fatalf("the machine never fetched the installer's kernel; endpoint requests %+v\ndnsmasq's log:\n%s\n%s",
			e.requests(), tail(readFile(logPath), 4000), m.describe())
	}
	assert.Regexp(t, `sent \S*/pool\.ipxe to 192\.168\.10\.`, readFile(logPath), "iPXE fetched the site's script over TFTP")
	reqs := e.requests()
	require.NotEmpty(t, reqs)
	assert.Equal(t, bootendpoint.ChainPath, reqs[0].path, "the script's chain is the first request: %+v", reqs)
	q, err := url.ParseQuery(reqs[0].rawQuery)
	require.NoError(t, err)
	assert.Equal(t, mac, q.Get("mac"), "iPXE filled in the MAC of the NIC it booted from")
	assert.Equal(t, uuid, strings.ToLower(q.Get("uuid")), "iPXE filled in the SMBIOS UUID")
	assert.Equal(t, http.StatusOK, reqs[0].status, "the endpoint served the claim's script")
}
