package qemubmc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The UEFI firmware (Debian's ovmf package) the machine runs.
const (
	OVMFCode = "/usr/share/OVMF/OVMF_CODE_4M.fd"
	OVMFVars = "/usr/share/OVMF/OVMF_VARS_4M.fd"
)

// ErrToolsMissing wraps the answer of Available when QEMU or OVMF is not
// installed.
var ErrToolsMissing = errors.New("QEMU or OVMF missing")

// Available says whether QEMU and OVMF are installed (scripts/vm-tools
// installs them).
func Available() error {
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		return fmt.Errorf("%w: qemu-system-x86_64 is not installed (Debian package qemu-system-x86; scripts/vm-tools installs it)", ErrToolsMissing)
	}
	for _, f := range []string{OVMFCode, OVMFVars} {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%w: OVMF, the UEFI firmware, is not installed (Debian package ovmf; scripts/vm-tools installs it)", ErrToolsMissing)
		}
	}
	return nil
}

// machine is one run of QEMU: one life of the host, from a power-on to
// the power going off. QEMU starts paused (-S) with an empty CD drive,
// so that the BMC puts the medium in before the firmware looks for it.
type machine struct {
	dir  string
	cmd  *exec.Cmd
	qmp  *qmp
	done chan struct{} // closed when QEMU has exited
	err  error         // its exit, once done
	log  *os.File
}

// The machine's CD drive: its block backend, and its device, which QMP's
// medium commands name.
const (
	cdDrive  = "cd0"
	cdDevice = "cdrom0"
)

// startMachine starts QEMU paused in dir and connects to its QMP socket.
func startMachine(ctx context.Context, o *Options, dir string) (*machine, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("machine folder: %w", err)
	}
	vars := filepath.Join(dir, "ovmf-vars.fd")
	b, err := os.ReadFile(OVMFVars)
	if err != nil {
		return nil, fmt.Errorf("OVMF variables: %w", err)
	}
	if err := os.WriteFile(vars, b, 0o600); err != nil {
		return nil, fmt.Errorf("OVMF variables: %w", err)
	}
	m := &machine{dir: dir, done: make(chan struct{})}
	// A unix socket's path is limited to about 100 bytes: the socket lives
	// in a short folder of its own, not in the test's deep one.
	sockDir, err := os.MkdirTemp("", "qemubmc-")
	if err != nil {
		return nil, fmt.Errorf("QMP socket folder: %w", err)
	}
	sock := filepath.Join(sockDir, "qmp.sock")
	args := []string{"-n", "10", "qemu-system-x86_64",
		"-machine", "pc,accel=tcg", "-m", strconv.Itoa(o.MemoryMiB), "-smp", "1", "-nographic", "-monitor", "none",
		"-uuid", o.uuid(),
		"-drive", "if=pflash,format=raw,readonly=on,file=" + opt(OVMFCode),
		"-drive", "if=pflash,format=raw,file=" + opt(vars),
		"-chardev", "file,id=s0,path=" + opt(filepath.Join(dir, "serial.log")), "-serial", "chardev:s0",
		// restrict=on: the machine reaches nothing but the one forward to
		// the boot endpoint. QEMU would still answer DHCP on this network
		// if asked: the capture shows whether the machine asked.
		"-netdev", "user,id=n0,restrict=on,guestfwd=tcp:" + o.Guest.String() + "-tcp:" + o.Host,
		// No ROM on the NIC: the firmware cannot boot from the network,
		// only from the CD; the image's iPXE drives the NIC itself.
		"-device", "virtio-net-pci,netdev=n0,romfile=,mac=" + o.MAC,
		"-object", "filter-dump,id=f0,netdev=n0,file=" + opt(filepath.Join(dir, "net.pcap")),
		// The CD is the only boot device the firmware is told of; a start
		// that is not from Cd leaves its drive empty (see apply).
		"-drive", "if=none,id=" + cdDrive + ",media=cdrom,readonly=on",
		"-device", "ide-cd,drive=" + cdDrive + ",id=" + cdDevice + ",bootindex=1",
		"-S", "-qmp", "unix:" + opt(sock) + ",server=on,wait=off",
	}
	m.log, err = os.Create(filepath.Join(dir, "qemu.log"))
	if err != nil {
		return nil, fmt.Errorf("QEMU log: %w", err)
	}
	m.cmd = exec.Command("nice", args...) //nolint:gosec // the test's own QEMU
	m.cmd.Stdout, m.cmd.Stderr = m.log, m.log
	// A test killed midway must not leave its machines running (nice
	// execs QEMU in the same process, which keeps the signal).
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		_ = m.log.Close()
		return nil, fmt.Errorf("start QEMU: %w", err)
	}
	go func() {
		m.err = m.cmd.Wait()
		_ = os.RemoveAll(sockDir)
		close(m.done)
	}()
	qctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	m.qmp, err = dialQMP(qctx, sock)
	if err != nil {
		m.kill()
		return nil, fmt.Errorf("QEMU did not open its QMP socket: %w (%s)", err, m.qemuLog())
	}
	return m, nil
}

// quit ends QEMU as a power loss ends a host (QMP quit, else a signal)
// and waits for it: the capture file is complete after it.
func (m *machine) quit() {
	if m.qmp != nil {
		// quit's answer may be lost as QEMU exits.
		_ = m.qmp.run("quit", nil, nil)
		m.qmp.close()
	}
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		m.kill()
	}
	_ = m.log.Close()
}

func (m *machine) kill() {
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.done
}

func (m *machine) qemuLog() string {
	b, _ := os.ReadFile(filepath.Join(m.dir, "qemu.log"))
	return strings.TrimSpace(string(b))
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;?=]*[A-Za-z]`)

// serialText is the console's text without terminal escapes.
func serialText(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "serial.log"))
	return ansi.ReplaceAllString(strings.ReplaceAll(string(b), "\r", ""), "")
}

// opt escapes a value inside a QEMU option list.
func opt(s string) string { return strings.ReplaceAll(s, ",", ",,") }
