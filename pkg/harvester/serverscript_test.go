package harvester

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A server of one's own boots its own architecture's files, and its
// installer reads the configuration from the URL it was given, with the
// console on the screen.
func TestServerInstallerScript(t *testing.T) {
	got, err := ServerInstallerScript(ServerScript{
		Mirror: "http://10.1.0.5/harvester", Version: "v1.5.0", Arch: "arm64",
		ConfigURL: "http://10.1.0.2:8081/boot/abc/config.yaml?mac=0c:c4:7a:00:00:01",
	})
	require.NoError(t, err)
	assert.Equal(t, `#!ipxe
# Harvester v1.5.0 (arm64) installer for a server of one's own. The join
# configuration comes from config_url.
kernel http://10.1.0.5/harvester/v1.5.0/harvester-v1.5.0-vmlinuz-arm64 initrd=harvester-v1.5.0-initrd-arm64 ip=dhcp net.ifnames=1 rd.cos.disable rd.noverifyssl root=live:http://10.1.0.5/harvester/v1.5.0/harvester-v1.5.0-rootfs-arm64.squashfs console=tty1 harvester.install.automatic=true harvester.install.skipchecks=true harvester.install.config_url=http://10.1.0.2:8081/boot/abc/config.yaml?mac=0c:c4:7a:00:00:01
initrd http://10.1.0.5/harvester/v1.5.0/harvester-v1.5.0-initrd-arm64
boot
`, got)
}

// Single boot names the server's management NIC on the command line,
// with the bond options, as the Equinix single-boot script does with the
// NIC iPXE booted from.
func TestServerInstallerScriptSingleBoot(t *testing.T) {
	got, err := ServerInstallerScript(ServerScript{
		Version: "v1.4.1", ConfigURL: "http://h/c", Console: "ttyS0,115200", BootMode: "single-boot",
		MAC: "0C:C4:7A:00:00:01", BondOptions: map[string]string{"mode": "active-backup"},
	})
	require.NoError(t, err)
	assert.Contains(t, got, "-vmlinuz-amd64 ")
	assert.Contains(t, got, " console=ttyS0,115200 ")
	assert.Contains(t, got, ` harvester.install.management_interface.interfaces="hwAddr:0c:c4:7a:00:00:01"`+
		" harvester.install.management_interface.method=dhcp"+
		" harvester.install.management_interface.bond_options.miimon=100"+
		" harvester.install.management_interface.bond_options.mode=active-backup\n", "the bond defaults fill in as for Equinix")
}

func TestServerInstallerScriptRefuses(t *testing.T) {
	for name, in := range map[string]ServerScript{
		"arch":            {Version: "v1.4.1", Arch: "s390x", ConfigURL: "http://h/c"},
		"version":         {Version: "master", ConfigURL: "http://h/c"},
		"no config URL":   {Version: "v1.4.1"},
		"space in URL":    {Version: "v1.4.1", ConfigURL: "http://h/c x"},
		"iPXE variable":   {Version: "v1.4.1", ConfigURL: "http://h/c?mac=${mac}"},
		"not http":        {Version: "v1.4.1", ConfigURL: "ftp://h/c"},
		"console":         {Version: "v1.4.1", ConfigURL: "http://h/c", Console: "tty1 rd.break"},
		"boot mode":       {Version: "v1.4.1", ConfigURL: "http://h/c", BootMode: "rescue"},
		"single-boot MAC": {Version: "v1.4.1", ConfigURL: "http://h/c", BootMode: "single-boot", MAC: "x"},
	} {
		_, err := ServerInstallerScript(in)
		assert.Error(t, err, name)
	}
}
