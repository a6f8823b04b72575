package joinagent

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

var (
	macs   = map[string]string{"eth0": "aa:bb:cc:00:00:01", "eth1": "aa:bb:cc:00:00:02"}
	expect = Expect{ServerURL: "https://10.0.0.10:443", Token: "join-token-1"}
)

func joinInput() harvester.JoinConfigInput {
	_, hash, _ := harvester.GenerateConsolePassword()
	return harvester.JoinConfigInput{
		ServerURL: "10.0.0.10", Token: "join-token-1", Hostname: "pool-abcdefgh", PasswordHash: hash,
		MACs: []string{macs["eth0"]}, BondOptions: map[string]string{"mode": "balance-tlb", "miimon": "100"},
		InstallDevice: "/dev/sda", ISOURL: "https://releases.rancher.com/harvester/v1.4.1/harvester-v1.4.1-amd64.iso",
	}
}

// install runs a script and a userdata document through the interpreter, the
// merge and the validation, as a booting server would.
func install(t *testing.T, script string, in harvester.JoinConfigInput) (Install, error) {
	t.Helper()
	boot, err := runIPXE(script, map[string]string{"ifname": "net0", "net0/mac": macs["eth0"], "net1/mac": macs["eth1"]})
	require.NoError(t, err)
	require.True(t, isHarvesterInstaller(boot), "the script did not boot the installer: %+v", boot)
	cfg := cmdlineConfig(boot.Args)
	ud, err := harvester.RenderJoinConfig(in)
	require.NoError(t, err)
	doc, err := userdataConfig(string(ud))
	require.NoError(t, err)
	merge(cfg, doc)
	return validate(cfg, expect, macs)
}

func TestTwoPhaseInstallConfigIsAccepted(t *testing.T) {
	script, err := harvester.InstallerScript("v1.4.1")
	require.NoError(t, err)
	ic, err := install(t, script, joinInput())
	require.NoError(t, err)
	assert.Equal(t, "pool-abcdefgh", ic.Hostname)
	assert.Equal(t, []string{macs["eth0"]}, ic.MACs)
	assert.Equal(t, "pool-abcdefgh", ic.Labels["equinix.harvesterhci.io/instance"])
}

func TestSingleBootReadsTheMACInIPXE(t *testing.T) {
	script, err := harvester.SingleBootScript("v1.4.1", map[string]string{"mode": "balance-tlb"})
	require.NoError(t, err)
	in := joinInput()
	in.MACs, in.SingleBoot = nil, true
	ic, err := install(t, script, in)
	require.NoError(t, err)
	assert.Equal(t, []string{macs["eth0"]}, ic.MACs, "the kernel line carries the MAC of the NIC that answered DHCP")
}

func TestShellScriptBootsNothing(t *testing.T) {
	boot, err := runIPXE(harvester.ShellScript(), map[string]string{"ifname": "net0"})
	require.NoError(t, err)
	assert.True(t, boot.Shell)
	assert.Empty(t, boot.Kernel)
}

func TestInstallFailsLikeARealOne(t *testing.T) {
	script, err := harvester.InstallerScript("v1.4.1")
	require.NoError(t, err)
	cases := map[string]struct {
		mutate func(*harvester.JoinConfigInput)
		want   string
	}{
		"MAC of another server": {func(in *harvester.JoinConfigInput) { in.MACs = []string{"de:ad:be:ef:00:01"} }, "matches no NIC"},
		"wrong token":           {func(in *harvester.JoinConfigInput) { in.Token = "other-token" }, "join token is wrong"},
		"wrong cluster":         {func(in *harvester.JoinConfigInput) { in.ServerURL = "10.9.9.9" }, "is not this cluster"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := joinInput()
			tc.mutate(&in)
			_, err := install(t, script, in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "token-1", "a failure must not print the token")
		})
	}
}

func TestMACInBothPlacesIsListedTwice(t *testing.T) {
	// Single-boot puts the NIC on the kernel line; a config that lists it too
	// would duplicate it, which the installer rejects.
	script, err := harvester.SingleBootScript("v1.4.1", nil)
	require.NoError(t, err)
	boot, err := runIPXE(script, map[string]string{"ifname": "net0", "net0/mac": macs["eth0"]})
	require.NoError(t, err)
	cfg := cmdlineConfig(boot.Args)
	doc, err := userdataConfig("install:\n  management_interface:\n    interfaces:\n    - hwAddr: " + macs["eth0"] + "\n")
	require.NoError(t, err)
	merge(cfg, doc)
	_, err = managementMACs(cfg, macs)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "listed twice")
}

func TestFormatServerURL(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.10":                   "https://10.0.0.10:443",
		"https://10.0.0.10":           "https://10.0.0.10:443",
		"https://vip.example.com:443": "https://vip.example.com:443",
	} {
		got, err := formatServerURL(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got)
	}
	for _, bad := range []string{"https://10.0.0.10:8443", "https://10.0.0.10/v3", ""} {
		_, err := formatServerURL(bad)
		assert.Error(t, err, bad)
	}
}

func TestIPXEInterpreter(t *testing.T) {
	script := strings.Join([]string{"#!ipxe", "dhcp", "goto nic_${ifname}", ":nic_net0", "set mac ${net0/mac} && goto kick",
		":nic_net1", "set mac ${net1/mac} && goto kick", ":kick", `kernel http://k/vmlinuz a="hwAddr:${mac}" b`, "boot"}, "\n")
	res, err := runIPXE(script, map[string]string{"ifname": "net1", "net0/mac": "m0", "net1/mac": "m1"})
	require.NoError(t, err)
	assert.Equal(t, "http://k/vmlinuz", res.Kernel)
	assert.Equal(t, []string{`a="hwAddr:m1"`, "b"}, res.Args)

	_, err = runIPXE("#!ipxe\n:a\ngoto a\n", nil)
	assert.ErrorContains(t, err, "loops")
	_, err = runIPXE("echo hi\n", nil)
	assert.ErrorContains(t, err, "#!ipxe")
	_, err = runIPXE("#!ipxe\nfrobnicate\n", nil)
	assert.ErrorContains(t, err, "unknown command")
}
