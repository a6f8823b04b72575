package vmrig

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

const version = "v1.4.1"

// mirrorPath is where the test serves its artifacts mirror.
const mirrorPath = "/harvester"

// equinixEndpoint serves the addon's own iPXE handler, pointed at an
// artifacts mirror on the same server that holds a HaltingKernel and an
// initrd.
func equinixEndpoint(t *testing.T) http.Handler {
	t.Helper()
	mirror, err := ArtifactsMirror(mirrorPath, version)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/ipxe/", harvester.NewIPXEHandler(harvester.WithArtifactsMirror(GuestURL+mirrorPath)))
	mux.Handle(mirrorPath+"/", mirror)
	return mux
}

// The Equinix provider's scripts (the reinstall flow's shell script and
// installer, and the single-boot installer) run through real iPXE, one
// boot each: what iPXE fetched is the mirror's kernel and initrd and
// nothing else, and the kernel starts with the command line the script
// built, the single-boot one with the booting NIC's MAC filled in.
func TestEquinixScriptsInRealIPXE(t *testing.T) {
	ctx := context.Background()
	a, err := harvester.ArtifactsFrom(GuestURL+mirrorPath, version)
	require.NoError(t, err)
	kernelPath, initrdPath := strings.TrimPrefix(a.KernelURL, GuestURL), strings.TrimPrefix(a.InitrdURL, GuestURL)
	common := "initrd=" + a.InitrdName + " ip=dhcp net.ifnames=1 rd.cos.disable rd.noverifyssl root=live:" + a.RootfsURL +
		" console=ttyS1,115200 harvester.install.automatic=true harvester.install.skipchecks=true" +
		" harvester.install.config_url=" + harvester.MetadataUserdataURL

	single, err := harvester.InstallerScriptURL(GuestURL, version, "single-boot", map[string]string{"mode": "balance-tlb", "miimon": "100"})
	require.NoError(t, err)
	single = strings.TrimPrefix(single, GuestURL)
	scripts := []struct {
		name, bootFile string
		wantPaths      []string
		// done says the script got as far as it goes.
		done        func(serial string) bool
		wantCmdline string
	}{
		{
			name: "shell", bootFile: "/ipxe/shell.ipxe", wantPaths: []string{"/ipxe/shell.ipxe"},
			done: func(serial string) bool { return strings.Contains(serial, "iPXE>") },
		},
		{
			name: "installer", bootFile: "/ipxe/" + version + "/install.ipxe",
			wantPaths:   []string{"/ipxe/" + version + "/install.ipxe", kernelPath, initrdPath},
			done:        func(serial string) bool { _, ok := KernelCommandLine(serial); return ok },
			wantCmdline: common,
		},
		{
			name: "single boot", bootFile: single,
			wantPaths: []string{"/ipxe/" + version + "/single-boot.ipxe", kernelPath, initrdPath},
			done:      func(serial string) bool { _, ok := KernelCommandLine(serial); return ok },
			wantCmdline: common + ` harvester.install.management_interface.interfaces="hwAddr:` + vmMAC + `"` +
				" harvester.install.management_interface.method=dhcp" +
				" harvester.install.management_interface.bond_options.miimon=100" +
				" harvester.install.management_interface.bond_options.mode=balance-tlb",
		},
	}
	for _, sc := range scripts {
		t.Run(sc.name, func(t *testing.T) {
			m := Require(t, Options{MAC: vmMAC, UUID: vmUUID, Handler: equinixEndpoint(t), BootFile: sc.bootFile})
			c, err := bmc.Dial(ctx, m.Endpoint)
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			_, err = c.BootOnce(ctx, bmc.BootNetwork, bmc.BootFirmwareLegacy)
			require.NoError(t, err)
			on := time.Now()
			require.NoError(t, c.Power(ctx, bmc.PowerActionOn))
			waitFor(t, sc.name+" script run", 120*time.Second, func() bool { return sc.done(m.Serial()) })
			cpu := m.CPU()
			var paths []string
			for _, r := range m.Requests() {
				paths = append(paths, r.Path)
				assert.Equal(t, http.StatusOK, r.Status, r.URL())
			}
			assert.Equal(t, sc.wantPaths, paths, "what iPXE fetched, and nothing else")
			if sc.wantCmdline != "" {
				got, _ := KernelCommandLine(m.Serial())
				assert.Equal(t, sc.wantCmdline, got, "the kernel's command line")
			}
			t.Logf("%s: power on -> done %v, QEMU CPU %v", sc.name, time.Since(on).Round(time.Millisecond), cpu)
			require.NoError(t, c.Power(ctx, bmc.PowerActionOff))
			waitFor(t, "the VM stops", 30*time.Second, func() bool { return m.HostPID() == 0 })
		})
	}
}
