package harvester

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var seedBond = map[string]string{"mode": "balance-tlb", "miimon": "100"}

func TestScriptsGolden(t *testing.T) {
	install, err := InstallerScript("v1.4.1")
	require.NoError(t, err)
	single, err := SingleBootScript("v1.4.1", seedBond)
	require.NoError(t, err)

	tests := []struct {
		golden string
		script string
	}{
		{golden: "shell.ipxe", script: ShellScript()},
		{golden: "install-v1.4.1.ipxe", script: install},
		{golden: "single-boot-v1.4.1.ipxe", script: single},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			assert.True(t, strings.HasPrefix(tc.script, "#!ipxe\n"))
			assertGolden(t, tc.golden, []byte(tc.script))
		})
	}
}

// kernelLine returns the arguments of the script's kernel command.
func kernelLine(t *testing.T, script string) []string {
	t.Helper()
	for line := range strings.Lines(script) {
		if strings.HasPrefix(line, "kernel ") {
			return strings.Fields(line)[2:]
		}
	}
	require.Fail(t, "no kernel line")
	return nil
}

func TestInstallerKernelArgs(t *testing.T) {
	a, err := ArtifactsFor("v1.4.1")
	require.NoError(t, err)
	common := []string{
		"initrd=harvester-v1.4.1-initrd-amd64",
		"ip=dhcp",
		"net.ifnames=1",
		"rd.cos.disable",
		"rd.noverifyssl",
		"root=live:" + a.RootfsURL,
		"console=ttyS1,115200",
		"harvester.install.automatic=true",
		"harvester.install.skipchecks=true",
		"harvester.install.config_url=https://metadata.platformequinix.com/userdata",
	}

	t.Run("reinstall", func(t *testing.T) {
		script, err := InstallerScript("v1.4.1")
		require.NoError(t, err)
		assert.Equal(t, common, kernelLine(t, script))
		assert.Contains(t, script, "kernel "+a.KernelURL+" ")
		assert.Contains(t, script, "\ninitrd "+a.InitrdURL+"\nboot\n")
		assert.NotContains(t, script, "management_interface", "MACs come from userdata in the reinstall flow")
	})

	t.Run("single-boot", func(t *testing.T) {
		script, err := SingleBootScript("v1.4.1", seedBond)
		require.NoError(t, err)
		want := append(append([]string{}, common...),
			`harvester.install.management_interface.interfaces="hwAddr:${mgmtmac}"`,
			"harvester.install.management_interface.method=dhcp",
			"harvester.install.management_interface.bond_options.miimon=100",
			"harvester.install.management_interface.bond_options.mode=balance-tlb",
		)
		assert.Equal(t, want, kernelLine(t, script))
		for _, nic := range []string{"net0", "net1", "net2", "net3"} {
			assert.Contains(t, script, ":nic_"+nic+"\nset mgmtmac ${"+nic+"/mac} && goto kick\n")
		}
		assert.Contains(t, script, "goto nic_${ifname} || goto nic_unknown\n")
		// x86 Linux truncates command lines at 2048 bytes; ${mgmtmac} expands
		// to 17 characters.
		line := strings.Join(kernelLine(t, script), " ")
		assert.Less(t, len(strings.ReplaceAll(line, "${mgmtmac}", "b8:59:9f:00:00:01")), 2048)
	})
}

func TestScriptsRejectInvalidInput(t *testing.T) {
	for _, version := range []string{"", "master", "1.4.1", "v1.4.1\nshell"} {
		t.Run("version "+version, func(t *testing.T) {
			_, err := InstallerScript(version)
			assert.ErrorIs(t, err, ErrInvalidVersion)
			_, err = SingleBootScript(version, nil)
			assert.ErrorIs(t, err, ErrInvalidVersion)
		})
	}
	t.Run("bond option that would inject an iPXE command", func(t *testing.T) {
		_, err := SingleBootScript("v1.4.1", map[string]string{"mode": "active-backup\nshell"})
		assert.ErrorIs(t, err, ErrInvalidBondOptions)
		_, err = SingleBootScript("v1.4.1", map[string]string{"primary": "${net0/mac}"})
		assert.ErrorIs(t, err, ErrInvalidBondOptions)
	})
}

func TestInstallerScriptURL(t *testing.T) {
	tests := []struct {
		name     string
		base     string
		version  string
		bootMode string
		bond     map[string]string
		want     string
		wantErr  error
	}{
		{name: "reinstall", base: "http://203.0.113.5:8080", version: "v1.4.1", bootMode: "reinstall", want: "http://203.0.113.5:8080/ipxe/v1.4.1/install.ipxe"},
		{name: "empty boot mode is reinstall", base: "http://203.0.113.5:8080/", version: "v1.4.1", want: "http://203.0.113.5:8080/ipxe/v1.4.1/install.ipxe"},
		{name: "base with path prefix", base: "https://addon.example.com/equinix/", version: "v1.4.1", bootMode: "reinstall", want: "https://addon.example.com/equinix/ipxe/v1.4.1/install.ipxe"},
		{name: "single-boot with seed bond", base: "http://203.0.113.5:8080", version: "v1.4.1", bootMode: "single-boot", bond: seedBond, want: "http://203.0.113.5:8080/ipxe/v1.4.1/single-boot.ipxe?miimon=100&mode=balance-tlb"},
		{name: "single-boot fills defaults", base: "http://203.0.113.5:8080", version: "v1.4.1", bootMode: "single-boot", want: "http://203.0.113.5:8080/ipxe/v1.4.1/single-boot.ipxe?miimon=100&mode=active-backup"},
		{name: "master", base: "http://203.0.113.5", version: "master", bootMode: "reinstall", wantErr: ErrInvalidVersion},
		{name: "unknown boot mode", base: "http://203.0.113.5", version: "v1.4.1", bootMode: "netboot", wantErr: ErrInvalidScriptRequest},
		{name: "bad bond", base: "http://203.0.113.5", version: "v1.4.1", bootMode: "single-boot", bond: map[string]string{"mode": "x"}, wantErr: ErrInvalidBondOptions},
		{name: "relative base", base: "/ipxe", version: "v1.4.1", bootMode: "reinstall", wantErr: ErrInvalidScriptRequest},
		{name: "base with query", base: "http://h/?a=b", version: "v1.4.1", bootMode: "reinstall", wantErr: ErrInvalidScriptRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := InstallerScriptURL(tc.base, tc.version, tc.bootMode, tc.bond)
			if tc.wantErr != nil {
				assert.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestShellScriptURL(t *testing.T) {
	got, err := ShellScriptURL("http://203.0.113.5:8080")
	require.NoError(t, err)
	assert.Equal(t, "http://203.0.113.5:8080/ipxe/shell.ipxe", got)

	_, err = ShellScriptURL("ftp://203.0.113.5")
	assert.ErrorIs(t, err, ErrInvalidScriptRequest)
}
