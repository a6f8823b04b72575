package netboot

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// What the tests run, where Debian's packages put it (scripts/vm-tools and
// scripts/netboot-tools install them).
const (
	dnsmasqBin = "/usr/sbin/dnsmasq"
	ipxeDir    = "/usr/lib/ipxe"
	virtioROM  = "/usr/lib/ipxe/qemu/efi-virtio.rom"
	ovmfCode   = "/usr/share/OVMF/OVMF_CODE_4M.fd"
	ovmfVars   = "/usr/share/OVMF/OVMF_VARS_4M.fd"
	// The Secure Boot build, and variables with Microsoft's keys enrolled
	// and Secure Boot on, as most servers ship.
	ovmfSecureCode = "/usr/share/OVMF/OVMF_CODE_4M.ms.fd"
	ovmfSecureVars = "/usr/share/OVMF/OVMF_VARS_4M.ms.fd"
)

// requireTools skips the test, or fails it under CI=true, without root
// (network namespaces) or one of the files.
func requireTools(t *testing.T, files ...string) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (network namespaces and taps)")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		missing = append(missing, "qemu-system-x86_64 (scripts/vm-tools)")
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, f+" (scripts/netboot-tools)")
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := "missing: " + strings.Join(missing, ", ")
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// firmware is how a machine boots.
type firmware string

const (
	// legacyBIOS is SeaBIOS with the iPXE ROM of QEMU's virtio NIC: its
	// PXE client is iPXE, which DHCP hands the chain URL at once.
	legacyBIOS firmware = "legacy BIOS"
	// uefi is OVMF with no ROM on the NIC: UEFI's own PXE client, which
	// DHCP hands an iPXE binary to fetch over TFTP.
	uefi firmware = "UEFI"
	// uefiSecureBoot is uefi with Secure Boot on and Microsoft's keys.
	uefiSecureBoot firmware = "UEFI with Secure Boot"
)

// machine is a QEMU machine on a tap of the management network, started
// powered on and booting from the network.
type machine struct {
	proc   *process
	serial string
}

func bootMachine(t *testing.T, l *lan, fw firmware, mac, uuid string) *machine {
	t.Helper()
	dir := t.TempDir()
	serial := filepath.Join(dir, "serial.log")
	nic := "virtio-net-pci,netdev=n0,mac=" + mac
	args := []string{"nice", "-n", "10", "qemu-system-x86_64", "-smp", "1", "-nographic", "-monitor", "none",
		"-chardev", "file,id=s0,path=" + serial, "-serial", "chardev:s0",
		"-netdev", "tap,id=n0,ifname=" + l.tap(t) + ",script=no,downscript=no", "-uuid", uuid, "-boot", "n"}
	switch fw {
	case legacyBIOS:
		args = append(args, "-machine", "pc,accel=tcg", "-m", "128", "-device", nic)
	case uefi:
		vars := filepath.Join(dir, "OVMF_VARS.fd")
		copyFile(t, ovmfVars, vars)
		args = append(args, "-machine", "q35,accel=tcg", "-m", "256",
			"-drive", "if=pflash,format=raw,unit=0,readonly=on,file="+ovmfCode,
			"-drive", "if=pflash,format=raw,unit=1,file="+vars,
			"-device", nic+",romfile=")
	case uefiSecureBoot:
		// Secure Boot's variables are protected by SMM, which the
		// firmware needs the machine to offer.
		vars := filepath.Join(dir, "OVMF_VARS.fd")
		copyFile(t, ovmfSecureVars, vars)
		args = append(args, "-machine", "q35,accel=tcg,smm=on", "-m", "256",
			"-global", "driver=cfi.pflash01,property=secure,value=on",
			"-drive", "if=pflash,format=raw,unit=0,readonly=on,file="+ovmfSecureCode,
			"-drive", "if=pflash,format=raw,unit=1,file="+vars,
			"-device", nic+",romfile=")
	}
	return &machine{proc: startIn(t, l.ns, dir, "qemu", args...), serial: serial}
}

func (m *machine) console() string { return readFile(m.serial) }

// gaveUp reports a machine that stopped, or whose firmware found nothing
// to boot.
func (m *machine) gaveUp() bool {
	c := m.console()
	return m.proc.exited() || strings.Contains(c, "No bootable device") || strings.Contains(c, "No bootable option")
}

// describe is what a failed test shows of the machine.
func (m *machine) describe() string {
	return fmt.Sprintf("QEMU's output:\n%s\nserial console (end):\n%s", m.proc.output(), tail(m.console(), 3000))
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.Create(to)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, errors.Join(err, out.Close()))
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
