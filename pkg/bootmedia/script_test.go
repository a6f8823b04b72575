package bootmedia

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
)

func TestScriptRefusesWhatIPXEWouldMisread(t *testing.T) {
	ok := Spec{Firmware: bmc.BootFirmwareUEFI, MAC: "52:54:00:00:00:01", ChainURL: "http://10.0.0.5/c/n"}
	_, err := Script(ok)
	require.NoError(t, err)
	for name, mutate := range map[string]func(*Spec){
		"setting expansion": func(s *Spec) { s.ChainURL = "http://10.0.0.5/c/${net0/ip}" },
		"second word":       func(s *Spec) { s.ChainURL = "http://10.0.0.5/c/n x" },
		"second command":    func(s *Spec) { s.ChainURL = "http://10.0.0.5/c/n\nshell" },
		"quote":             func(s *Spec) { s.ChainURL = "http://10.0.0.5/c/n'" },
		"not canonical":     func(s *Spec) { s.ChainURL = "HTTP://10.0.0.5/c/n" },
		"mac given":         func(s *Spec) { s.ChainURL = "http://10.0.0.5/c?mac=x" },
		"user info":         func(s *Spec) { s.ChainURL = "http://u:p@10.0.0.5/c" },
		"scheme":            func(s *Spec) { s.ChainURL = "tftp://10.0.0.5/c" },
		"relative":          func(s *Spec) { s.ChainURL = "/c/n" },
		"MAC":               func(s *Spec) { s.MAC = "52:54:00:00:00:01; shell" },
		"long MAC":          func(s *Spec) { s.MAC = "00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01" },
		"arch":              func(s *Spec) { s.Arch = "s390x" },
		"firmware":          func(s *Spec) { s.Firmware = "bios" },
		"arm64 legacy":      func(s *Spec) { s.Arch, s.Firmware = "arm64", bmc.BootFirmwareLegacy },
		"IPv6 address":      func(s *Spec) { s.Static = &StaticAddress{Address: netip.MustParsePrefix("fd00::5/64")} },
		"network address":   func(s *Spec) { s.Static = &StaticAddress{Address: netip.MustParsePrefix("10.0.0.0/24")} },
		"broadcast":         func(s *Spec) { s.Static = &StaticAddress{Address: netip.MustParsePrefix("10.0.0.255/24")} },
		"/32":               func(s *Spec) { s.Static = &StaticAddress{Address: netip.MustParsePrefix("10.0.0.5/32")} },
		"gateway outside": func(s *Spec) {
			s.Static = &StaticAddress{Address: netip.MustParsePrefix("10.0.0.5/24"), Gateway: netip.MustParseAddr("10.0.1.1")}
		},
		"gateway is self": func(s *Spec) {
			s.Static = &StaticAddress{Address: netip.MustParsePrefix("10.0.0.5/24"), Gateway: netip.MustParseAddr("10.0.0.5")}
		},
		"IPv6 DNS": func(s *Spec) {
			s.Static = &StaticAddress{Address: netip.MustParsePrefix("10.0.0.5/24"), DNS: netip.MustParseAddr("fd00::53")}
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := ok
			mutate(&s)
			_, err := Script(s)
			assert.ErrorIs(t, err, ErrInvalid)
		})
	}
}

// The DHCP script asks DHCP on the management NIC alone, a few times,
// and the static one never asks it.
func TestScriptAddressing(t *testing.T) {
	dhcp, err := Script(Spec{Firmware: bmc.BootFirmwareUEFI, MAC: "52-54-00-00-00-0A", ChainURL: "http://h/c"})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(dhcp, "#!ipxe\n"))
	assert.Contains(t, dhcp, "set want 52:54:00:00:00:0a\n", "MAC in iPXE's form whatever form it was given in")
	assert.Contains(t, dhcp, "dhcp ${nic} && goto up ||\n")
	assert.NotContains(t, dhcp, "\ndhcp\n", "never DHCP on every NIC")
	assert.NotContains(t, dhcp, "autoboot")
	assert.Contains(t, dhcp, "chain http://h/c?mac=${${nic}/mac}&uuid=${uuid} ||\n")

	static, err := Script(Spec{Firmware: bmc.BootFirmwareUEFI, MAC: "52:54:00:00:00:0a", ChainURL: "http://10.9.0.1/c",
		Static: &StaticAddress{Address: netip.MustParsePrefix("10.9.0.7/16")}})
	require.NoError(t, err)
	assert.NotContains(t, static, "dhcp")
	assert.Contains(t, static, "set ${nic}/ip 10.9.0.7\nset ${nic}/netmask 255.255.0.0\n")
	assert.NotContains(t, static, "/gateway", "no gateway given, none set")
	assert.NotContains(t, static, "/dns")
}
