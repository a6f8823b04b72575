package vmrig

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint"
	"github.com/harvester/harvester-equinix-addon/pkg/bootendpoint/claimstest"
	"github.com/harvester/harvester-equinix-addon/pkg/bootfirmware"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
)

// uefiBootFlags is Set System Boot Options, parameter 5, as ipmi_sim
// traces it: valid and next boot only with the EFI bit (a0), force PXE.
const uefiBootFlags = "05 a0 04 00 00 00"

// legacyBootFlags are the same without the EFI bit: a legacy PXE boot.
const legacyBootFlags = "05 80 04 00 00 00"

// A server that boots UEFI only, as many sold today: OVMF with iPXE's EFI
// build from the NIC's ROM. Sent to legacy PXE (the boot flags without the
// EFI bit), it does not boot from the network. The pool's choice for its
// IPMI BMC, which cannot report the server's mode, is UEFI, and the BMC is
// told so: the boot flags ipmi_sim received carry the EFI bit. Powered on, real OVMF
// runs real iPXE EFI, which asks the boot endpoint for its script by the
// fixed chain URL with its MAC and SMBIOS UUID filled in, is served the
// claim's installer, fetches its kernel and initrd and starts the kernel
// (HaltingKernel, an EFI application too) with the configuration URL
// that carries the claim's nonce.
func TestUEFIServerBootsIntoTheEndpoint(t *testing.T) {
	ctx := context.Background()
	key := bytes.Repeat([]byte{0x38}, bootendpoint.KeySize)
	claims := claimstest.New(claimstest.Join{ServerURL: "192.168.0.10", Token: ownedToken, InstallDevice: "/dev/sda",
		PasswordHash: "$6$vmrigsalt$" + strings.Repeat("a", 86)})
	chain := bootendpoint.ChainPath + bootendpoint.ChainQuery
	a, err := harvester.ArtifactsFrom(GuestURL+mirrorPath, version)
	require.NoError(t, err)

	m := Require(t, Options{MAC: vmMAC, UUID: vmUUID, Handler: ownedEndpoint(t, key, claims), BootFile: chain, Firmware: FirmwareUEFI})
	c := dial(ctx, t, m)

	// Told a legacy network boot, the server does not boot from the
	// network: its firmware has no legacy PXE.
	_, err = c.BootOnce(ctx, bmc.BootNetwork, bmc.BootFirmwareLegacy)
	require.NoError(t, err)
	require.NoError(t, c.Power(ctx, bmc.PowerActionOn))
	var network, running bool
	waitFor(t, "the VM starts", 30*time.Second, func() bool { network, running = m.NetworkStart(); return running })
	assert.False(t, network, "a UEFI-only server sent to legacy PXE boots as it is set")
	require.NoError(t, c.Power(ctx, bmc.PowerActionOff))
	waitFor(t, "the VM stops", 30*time.Second, func() bool { return m.HostPID() == 0 })
	assert.Empty(t, m.Requests())
	sys, err := c.Inventory(ctx)
	require.NoError(t, err)
	claims.Add(claimstest.Claim{Claim: bootendpoint.Claim{ID: claimID, Instance: "owned-u-5m2x", Server: "rack1-u09",
		MAC: vmMAC, SystemUUID: sys.SystemUUID, Version: version}})

	// What the pool asks of this server's BMC: its Inventory says nothing
	// of the firmware, and the BMC speaks IPMI.
	inv := &seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Name: "rack1-u09", Namespace: seederv1alpha1.InventoryNamespace}}
	inv.Spec.BaseboardManagementSpec.Connection.Port = m.Endpoint.Port
	inv.Spec.BaseboardManagementSpec.Connection.ProviderOptions = &seederv1alpha1.ProviderOptions{
		IPMITOOL: &seederv1alpha1.IPMITOOLOptions{Port: m.Endpoint.Port}}
	fw, problem := bootfirmware.For(inv, "")
	require.Nil(t, problem)
	used, err := c.BootOnce(ctx, bmc.BootNetwork, fw.Want)
	require.NoError(t, err)
	require.Equal(t, bmc.BootFirmwareUEFI, used, "chosen because %s", fw.Why)
	assert.Eventually(t, func() bool { return len(bootFlags(m)) == 2 }, 5*time.Second, 20*time.Millisecond)
	assert.Equal(t, []string{legacyBootFlags, uefiBootFlags}, bootFlags(m), "the BMC was told to boot UEFI")

	on := time.Now()
	require.NoError(t, c.Power(ctx, bmc.PowerActionOn))
	waitFor(t, "the installer's kernel runs", 300*time.Second, func() bool { _, ok := KernelCommandLine(m.Serial()); return ok })
	reqs := m.Requests()
	require.NotEmpty(t, reqs)
	t.Logf("power on -> chain URL %v, -> kernel running %v; QEMU CPU %v", reqs[0].At.Sub(on).Round(time.Millisecond),
		time.Since(on).Round(time.Millisecond), m.CPU())
	var urls []string
	for _, r := range reqs {
		urls = append(urls, r.URL())
		assert.Equal(t, http.StatusOK, r.Status, r.URL())
		assert.True(t, strings.HasPrefix(r.UserAgent, "iPXE/"), r.UserAgent)
	}
	assert.Equal(t, []string{
		"/boot/ipxe?mac=52%3A54%3A00%3A29%3A00%3A01&uuid=" + vmUUID,
		strings.TrimPrefix(a.KernelURL, GuestURL),
		strings.TrimPrefix(a.InitrdURL, GuestURL),
	}, urls, "the exact URLs real iPXE EFI requested, MAC and UUID filled in, and nothing else")
	assert.Empty(t, claims.Refusals())
	cmdline, _ := KernelCommandLine(m.Serial())
	args := strings.Fields(cmdline)
	assert.Contains(t, args, "harvester.install.config_url="+GuestURL+"/boot/"+bootendpoint.Nonce(key, claimID)+"/config.yaml?mac="+vmMAC, cmdline)
	assert.Contains(t, args, "root=live:"+a.RootfsURL)
	assert.Regexp(t, `Features:[^\n]* EFI`, m.Serial(), "iPXE's EFI build ran")
	starts := m.BMC.PowerTransitions()
	require.NotEmpty(t, starts)
	assert.True(t, starts[len(starts)-1].NetworkBoot(), "%+v", starts)

	require.NoError(t, c.Power(ctx, bmc.PowerActionOff))
	waitFor(t, "the VM stops", 30*time.Second, func() bool { return m.HostPID() == 0 })
}

// bootFlags are the boot flags (Set System Boot Options, parameter 5)
// the machine's BMC received, as it traced them.
func bootFlags(m *Machine) []string {
	var out []string
	for _, msg := range m.BMC.Messages() {
		if msg.NetFn == 0 && msg.Cmd == 0x08 && strings.HasPrefix(msg.Data, "05 ") {
			out = append(out, msg.Data)
		}
	}
	return out
}
