package vmrig

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/redact"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
)

// GuestURL is where the guest reaches Options.Handler: the one address
// its restricted network forwards.
const GuestURL = "http://10.0.2.100"

const guestAddr = "10.0.2.100:80"

// virtioROM is the iPXE ROM QEMU's virtio NIC loads; without it QEMU
// refuses the NIC. It holds iPXE's BIOS and EFI builds: SeaBIOS runs the
// one, OVMF the other.
const virtioROM = "/usr/lib/ipxe/qemu/efi-virtio.rom"

// OVMF, the UEFI machine's firmware (Debian's ovmf): its code, read-only,
// and the template of its variable store, which each machine copies.
const (
	ovmfCode = "/usr/share/OVMF/OVMF_CODE_4M.fd"
	ovmfVars = "/usr/share/OVMF/OVMF_VARS_4M.fd"
)

// Firmware is the machine's firmware.
type Firmware string

// Firmwares of the machine.
const (
	// FirmwareBIOS is SeaBIOS, QEMU's own, booting legacy (the default).
	FirmwareBIOS Firmware = ""
	// FirmwareUEFI is OVMF: the machine boots UEFI only, as most servers
	// sold today can and many must.
	FirmwareUEFI Firmware = "uefi"
)

// Options describe the machine.
type Options struct {
	// MAC is the NIC's address, e.g. 52:54:00:29:00:01.
	MAC string
	// UUID is the SMBIOS system UUID (QEMU -uuid, and the BMC's system
	// GUID); empty leaves QEMU's, which iPXE reports as all zeros.
	UUID string
	// Handler answers every HTTP request of the guest.
	Handler http.Handler
	// BootFile is the path and query on Handler that DHCP names as the
	// boot file; empty means /boot.ipxe.
	BootFile string
	// Username and Password of the BMC's administrator; empty means
	// "admin" and "vmrig-password".
	Username, Password string
	// Firmware is the machine's: SeaBIOS unless FirmwareUEFI.
	Firmware Firmware
	// Dir holds the machine's files; empty means a temporary folder that
	// Close removes (Require: the test's).
	Dir string
}

// Machine is a running BMC whose host is the VM; the VM runs while the
// host is powered.
type Machine struct {
	// Endpoint is the BMC, for bmc.Dial.
	Endpoint bmc.Endpoint
	// BMC is ipmi_sim, for its power transitions and boot override.
	BMC *ipmisim.Sim
	// Dir holds the VM's serial log, QEMU's output and the BMC's files.
	Dir string

	server  *recorder
	tempDir string
}

// Require starts the machine, powered off, for the test and stops it
// when the test ends; the serial log's end goes to a failed test's
// output. Without QEMU, its iPXE ROMs or (for a UEFI machine) OVMF the
// test fails under CI=true and is skipped otherwise.
func Require(t *testing.T, opts Options) *Machine {
	t.Helper()
	if err := Available(opts.Firmware); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v", err)
		}
		t.Skipf("%v", err)
	}
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	m, err := Start(opts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serial console (end):\n%s", tail(m.Serial(), 3000))
		}
		if err := m.Close(); err != nil {
			t.Errorf("stop the machine: %v", err)
		}
	})
	return m
}

// Start starts the machine, powered off: its BMC, and the server the
// guest reaches. Close stops both, and the VM with them; should the
// process die first, ipmi_sim's parent-death signal and the chassis
// control's watchdog end them (package ipmisim). Available says what is
// missing when it cannot run.
func Start(opts Options) (m *Machine, err error) {
	if err := Available(opts.Firmware); err != nil {
		return nil, err
	}
	opts.Username = cmpOr(opts.Username, "admin")
	opts.Password = cmpOr(opts.Password, "vmrig-password")
	opts.BootFile = cmpOr(opts.BootFile, "/boot.ipxe")
	m = &Machine{Dir: opts.Dir}
	defer func() {
		if err != nil {
			_ = m.Close()
		}
	}()
	if m.Dir == "" {
		if m.Dir, err = os.MkdirTemp("", "vmrig-"); err != nil {
			return nil, fmt.Errorf("a folder for the machine: %w", err)
		}
		m.tempDir = m.Dir
	} else if err := os.MkdirAll(m.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("a folder for the machine: %w", err)
	}
	if m.server, err = startRecorder(opts.Handler); err != nil {
		return nil, err
	}
	if opts.Firmware == FirmwareUEFI {
		// The machine's own variable store, kept across its starts as a
		// server's NVRAM is.
		if err := copyFile(ovmfVars, filepath.Join(m.Dir, "ovmf-vars.fd")); err != nil {
			return nil, err
		}
	}
	port := m.server.port
	m.BMC, err = ipmisim.Start(ipmisim.Options{
		Username: opts.Username, Password: opts.Password, UUID: opts.UUID,
		Manufacturer: "QEMU", Model: "Standard PC (i440FX + PIIX, 1996)", SerialNumber: "vmrig",
		Dir:  filepath.Join(m.Dir, "bmc"),
		Host: func(network bool) []string { return qemuArgs(opts, m.Dir, port, network) },
		// OVMF runs the EFI build of the NIC's iPXE only: a legacy PXE
		// boot does not reach the network on the UEFI machine, as on a
		// server that boots UEFI only.
		UEFIOnly: opts.Firmware == FirmwareUEFI,
	})
	if err != nil {
		return nil, fmt.Errorf("start the machine's BMC: %w", err)
	}
	// The BMC's default timeout, as the controller uses: a power off waits
	// in ipmi_sim's chassis control for QEMU to end (up to two seconds
	// before it is killed), which on a loaded machine took more than five.
	m.Endpoint = bmc.Endpoint{Protocol: bmc.ProtocolIPMI, Host: m.BMC.Host, Port: m.BMC.Port,
		Username: opts.Username, Password: redact.Sensitive(opts.Password)}
	return m, nil
}

// Close stops the BMC and the VM (its process group), then the guest's
// server, and removes the folder Start made.
func (m *Machine) Close() error {
	var errs []error
	if m.BMC != nil {
		if err := m.BMC.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop ipmi_sim: %w", err))
		}
	}
	if m.server != nil {
		m.server.close()
	}
	if m.tempDir != "" {
		errs = append(errs, os.RemoveAll(m.tempDir))
	}
	return errors.Join(errs...)
}

// Available says what the machine cannot run without, if anything is
// missing: QEMU, its iPXE ROMs, OVMF for a UEFI machine, ipmi_sim.
func Available(fw Firmware) error {
	if fw == FirmwareUEFI {
		for _, f := range []string{ovmfCode, ovmfVars} {
			if _, err := os.Stat(f); err != nil {
				return errors.New("OVMF, the UEFI firmware, is not installed (Debian package ovmf; scripts/vm-tools installs it)")
			}
		}
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		return errors.New("qemu-system-x86_64 is not installed (Debian package qemu-system-x86; scripts/vm-tools installs it)")
	}
	if _, err := os.Stat(virtioROM); err != nil {
		return errors.New("QEMU's iPXE ROMs are not installed (Debian package ipxe-qemu; scripts/vm-tools installs it)")
	}
	if _, err := exec.LookPath("ipmi_sim"); err != nil {
		return ipmisim.ErrNotInstalled
	}
	return nil
}

// qemuArgs is the VM's command line for one start. A network boot boots
// from the NIC's iPXE ROM; any other boots the (absent) disk, with no ROM
// on the NIC, or SeaBIOS would fall back to it. A UEFI machine runs OVMF
// from flash with its own variable store; it boots the NIC first
// (bootindex) only on a network boot, and its other starts get no boot
// file from DHCP, so that OVMF's own PXE client has nothing to fetch.
func qemuArgs(opts Options, dir string, port int, network bool) []string {
	netdev := "user,id=n0,restrict=on" +
		",guestfwd=tcp:" + guestAddr + "-tcp:127.0.0.1:" + strconv.Itoa(port)
	if network || opts.Firmware != FirmwareUEFI {
		netdev += ",bootfile=" + qemuOpt(GuestURL+opts.BootFile)
	}
	nic, order := "virtio-net-pci,netdev=n0,mac="+opts.MAC, "n"
	if !network {
		nic, order = nic+",romfile=", "c"
	}
	memory := "128"
	var firmware []string
	if opts.Firmware == FirmwareUEFI {
		// OVMF wants more room than SeaBIOS; bootindex, not -boot, is
		// the order it follows.
		memory = "256"
		firmware = []string{
			"-drive", "if=pflash,format=raw,readonly=on,file=" + qemuOpt(ovmfCode),
			"-drive", "if=pflash,format=raw,file=" + qemuOpt(filepath.Join(dir, "ovmf-vars.fd")),
		}
		if network {
			nic += ",bootindex=1"
		}
	}
	args := []string{
		// The machine is shared: the VM yields to the rest.
		"nice", "-n", "10", "qemu-system-x86_64",
		"-machine", "pc,accel=tcg", "-m", memory, "-smp", "1",
		"-nographic", "-monitor", "none",
	}
	args = append(args, firmware...)
	args = append(args,
		"-chardev", "file,id=s0,append=on,path="+qemuOpt(filepath.Join(dir, "serial.log")), "-serial", "chardev:s0",
		"-netdev", netdev, "-device", nic)
	if opts.Firmware != FirmwareUEFI {
		args = append(args, "-boot", order)
	}
	if opts.UUID != "" {
		args = append(args, "-uuid", opts.UUID)
	}
	return args
}

// copyFile copies src to dst, writable by the test alone.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("read %s: %w", src, err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	return nil
}

// qemuOpt escapes a value inside a QEMU option list, where a comma
// separates options.
func qemuOpt(s string) string { return strings.ReplaceAll(s, ",", ",,") }

// Requests returns every request the guest made, in order.
func (m *Machine) Requests() []Request { return m.server.requests() }

// Serial returns the VM's serial console so far, across its starts.
func (m *Machine) Serial() string {
	b, _ := os.ReadFile(filepath.Join(m.Dir, "serial.log"))
	return string(b)
}

// HostPID is QEMU's pid while the VM runs, else 0.
func (m *Machine) HostPID() int { return m.BMC.HostPID() }

// NetworkStart says whether the running VM was started to boot from the
// network (its NIC has iPXE's ROM); ok is false when no VM runs.
func (m *Machine) NetworkStart() (network, ok bool) {
	pid := m.HostPID()
	if pid == 0 {
		return false, false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false, false
	}
	return !strings.Contains(string(b), ",romfile="), true
}

// CPU is the processor time QEMU has used since it started (0 when it
// does not run).
func (m *Machine) CPU() time.Duration {
	pid := m.HostPID()
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	// utime and stime, fields 14 and 15 of stat, in clock ticks of
	// 1/100 s (USER_HZ on Linux).
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
