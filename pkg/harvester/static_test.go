package harvester

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testStatic() *StaticAddress {
	return &StaticAddress{Address: netip.MustParsePrefix("10.0.2.15/24"), Gateway: netip.MustParseAddr("10.0.2.2"),
		Nameservers: []netip.Addr{netip.MustParseAddr("10.0.2.3"), netip.MustParseAddr("10.0.2.4")}}
}

// A server on a network without DHCP installs with its static address:
// the installer's static method with ip, subnet_mask and gateway, and the
// name servers it requires with one. Interfaces, bond and VLAN stay as
// with DHCP.
func TestRenderJoinConfigStatic(t *testing.T) {
	in := baseInput(t)
	in.BondOptions = map[string]string{"mode": "balance-tlb"}
	in.Static = testStatic()
	data, err := RenderJoinConfig(in)
	require.NoError(t, err)
	doc := parseRendered(t, data)
	assert.Equal(t, []any{"10.0.2.3", "10.0.2.4"}, child(t, doc, "os")["dns_nameservers"])
	mgmt := child(t, child(t, doc, "install"), "management_interface")
	assert.Equal(t, "static", mgmt["method"])
	assert.Equal(t, "10.0.2.15", mgmt["ip"])
	assert.Equal(t, "255.255.255.0", mgmt["subnet_mask"])
	assert.Equal(t, "10.0.2.2", mgmt["gateway"])
	assert.Equal(t, []any{map[string]any{"hwAddr": "b8:59:9f:00:00:01"}}, mgmt["interfaces"])
	assert.Equal(t, map[string]any{"mode": "balance-tlb", "miimon": "100"}, mgmt["bond_options"])
	assert.NotContains(t, mgmt, "vlan_id")
	assertDocumentedKeys(t, doc, "")

	in.Static = nil
	data, err = RenderJoinConfig(in)
	require.NoError(t, err)
	doc = parseRendered(t, data)
	assert.NotContains(t, child(t, doc, "os"), "dns_nameservers", "DHCP gives the name servers")
	mgmt = child(t, child(t, doc, "install"), "management_interface")
	assert.Equal(t, "dhcp", mgmt["method"])
	assert.NotContains(t, mgmt, "ip")
}

func TestRenderJoinConfigRefusesBadStatic(t *testing.T) {
	for name, s := range map[string]StaticAddress{
		"IPv6":             {Address: netip.MustParsePrefix("fd00::5/64"), Gateway: netip.MustParseAddr("fd00::1"), Nameservers: testStatic().Nameservers},
		"network address":  {Address: netip.MustParsePrefix("10.0.2.0/24"), Gateway: netip.MustParseAddr("10.0.2.2"), Nameservers: testStatic().Nameservers},
		"broadcast":        {Address: netip.MustParsePrefix("10.0.2.255/24"), Gateway: netip.MustParseAddr("10.0.2.2"), Nameservers: testStatic().Nameservers},
		"/31":              {Address: netip.MustParsePrefix("10.0.2.1/31"), Gateway: netip.MustParseAddr("10.0.2.0"), Nameservers: testStatic().Nameservers},
		"gateway outside":  {Address: netip.MustParsePrefix("10.0.2.15/24"), Gateway: netip.MustParseAddr("10.0.3.1"), Nameservers: testStatic().Nameservers},
		"gateway itself":   {Address: netip.MustParsePrefix("10.0.2.15/24"), Gateway: netip.MustParseAddr("10.0.2.15"), Nameservers: testStatic().Nameservers},
		"no name server":   {Address: netip.MustParsePrefix("10.0.2.15/24"), Gateway: netip.MustParseAddr("10.0.2.2")},
		"IPv6 name server": {Address: netip.MustParsePrefix("10.0.2.15/24"), Gateway: netip.MustParseAddr("10.0.2.2"), Nameservers: []netip.Addr{netip.MustParseAddr("fd00::53")}},
	} {
		in := baseInput(t)
		in.Static = &s
		_, err := RenderJoinConfig(in)
		assert.ErrorIs(t, err, ErrInvalidJoinConfig, name)
	}
}

// The installer's live system fetches its root file system and its
// configuration before it reads the configuration: with a static address
// it brings the management NIC (named by its MAC) up with it rather than
// asking DHCP; in single boot the command line's method is static too,
// as the command line wins over the configuration.
func TestServerInstallerScriptStatic(t *testing.T) {
	got, err := ServerInstallerScript(ServerScript{Version: "v1.4.1", ConfigURL: "http://10.0.2.2:8081/boot/abc/config.yaml",
		MAC: "52:54:00:AB:CD:EF", Static: testStatic()})
	require.NoError(t, err)
	assert.NotContains(t, got, "ip=dhcp")
	assert.Contains(t, got, " ifname=bootnic:52:54:00:ab:cd:ef ip=10.0.2.15::10.0.2.2:255.255.255.0::bootnic:none nameserver=10.0.2.3\n")
	assert.NotContains(t, got, "management_interface", "reinstall: the configuration carries the interface")

	got, err = ServerInstallerScript(ServerScript{Version: "v1.4.1", ConfigURL: "http://h/c", BootMode: "single-boot",
		MAC: "52:54:00:AB:CD:EF", Static: testStatic()})
	require.NoError(t, err)
	assert.Contains(t, got, " harvester.install.management_interface.method=static ")
	assert.Equal(t, 1, strings.Count(got, "ip=10.0.2.15::"))

	_, err = ServerInstallerScript(ServerScript{Version: "v1.4.1", ConfigURL: "http://h/c", MAC: "x", Static: testStatic()})
	assert.ErrorIs(t, err, ErrInvalidScriptRequest, "the NIC is named by its MAC")
	bad := testStatic()
	bad.Nameservers = nil
	_, err = ServerInstallerScript(ServerScript{Version: "v1.4.1", ConfigURL: "http://h/c", MAC: "52:54:00:AB:CD:EF", Static: bad})
	assert.ErrorIs(t, err, ErrInvalidScriptRequest)
}
