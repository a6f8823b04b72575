package ipmisim

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/template"
	"time"
)

//go:embed files
var files embed.FS

// ErrNotInstalled says ipmi_sim is not on PATH.
var ErrNotInstalled = errors.New("ipmi_sim is not installed (Debian package openipmi; scripts/bmc-tools installs it)")

// Options describe the simulated BMC.
type Options struct {
	// Username and Password of the administrator (required).
	Username, Password string
	// FRU product facts; defaults are a plausible server.
	Manufacturer, Model, SerialNumber string
	// Dir holds the configuration and the BMC's state (required; a test's
	// t.TempDir()).
	Dir string
	// Port is the UDP port to listen on; 0 picks a free one. Starting
	// again on the port of a stopped Sim is a BMC that rebooted: it
	// forgets every session.
	Port int
	// UUID is the host's SMBIOS UUID, which Get System GUID answers;
	// empty means DefaultUUID.
	UUID string
	// Host, when set, makes the host a program: power on starts
	// Host(networkBoot) (networkBoot is whether the boot device set for
	// this start is PXE), the host is on while it runs, and power off
	// ends it (SIGTERM, then SIGKILL). It must stay in the foreground. Nil
	// makes the host a power switch that tests flip with SetPower.
	Host func(networkBoot bool) []string
	// UEFIOnly makes a program host's firmware boot UEFI only, as many
	// servers sold today do: a network boot whose boot flags lack the EFI
	// bit (a legacy PXE boot) starts Host(false), the host as it is set,
	// and only one with it Host(true). ipmi_sim keeps the device of the
	// boot flags alone, so the chassis control reads the EFI bit from the
	// BMC's trace of the request, which the watcher records before
	// ipmi_sim answers it.
	UEFIOnly bool
	// NoChassisControl leaves the chassis control out, as a BMC that
	// cannot switch the host or choose its boot device: ipmi_sim then
	// refuses Set System Boot Options with completion code 0xCC.
	NoChassisControl bool
}

// DefaultUUID is the host's UUID unless Options.UUID says otherwise.
const DefaultUUID = "2b3f8c4e-9a1d-4e6b-8c7f-0123456789ab"

// Sim is a running ipmi_sim.
type Sim struct {
	// Host and Port are the IPMI LAN address (UDP).
	Host string
	Port int

	dir     string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	exited  chan struct{}
	console net.Conn
	reader  *bufio.Reader

	consoleMu sync.Mutex

	outMu    sync.Mutex
	controls []Control // Chassis Control requests received, in order
	messages []Message // every request received in a session, in order
	tail     []string  // last lines of output, for failure messages

	hosted      bool
	transitions *transitionLog
}

// startAttempts bounds the starts of one ipmi_sim whose ports were taken.
const startAttempts = 3

// Start writes lan.conf, bmc.emu, inventory.emu and the chassis control
// script into opts.Dir and starts ipmi_sim on a free loopback UDP port.
// It returns once the console answers.
//
// The ports are found free by opening and closing them, and ipmi_sim binds
// them a moment later: on a busy machine another socket may take one in
// between, which says nothing about the BMC. ipmi_sim then exits at once,
// and it is started again on other ports (a LAN port the caller chose
// stays taken, so the tries end as they began).
func Start(opts Options) (*Sim, error) {
	bin, err := exec.LookPath("ipmi_sim")
	if err != nil {
		return nil, ErrNotInstalled
	}
	return startTrying(bin, opts, freePort)
}

// startTrying starts ipmi_sim on ports pick finds, up to startAttempts
// times while one was taken.
func startTrying(bin string, opts Options, pick func(network string) (int, error)) (*Sim, error) {
	if opts.Username == "" || opts.Dir == "" {
		return nil, errors.New("ipmisim: Username and Dir are required")
	}
	opts.Manufacturer = cmpOr(opts.Manufacturer, "Supermicro")
	opts.Model = cmpOr(opts.Model, "SYS-510P-M")
	opts.SerialNumber = cmpOr(opts.SerialNumber, "S123456X1234567")
	var s *Sim
	var err error
	for range startAttempts {
		s, err = start(bin, opts, pick)
		if err == nil || !strings.Contains(err.Error(), "Address already in use") {
			break
		}
	}
	return s, err
}

func start(bin string, opts Options, pick func(network string) (int, error)) (*Sim, error) {
	var err error
	port := opts.Port
	if port == 0 {
		if port, err = pick("udp"); err != nil {
			return nil, err
		}
	}
	consolePort, err := pick("tcp")
	if err != nil {
		return nil, err
	}
	if err := writeFiles(opts, port, consolePort); err != nil {
		return nil, err
	}
	s := &Sim{Host: "127.0.0.1", Port: port, dir: opts.Dir, exited: make(chan struct{}), hosted: opts.Host != nil,
		transitions: newTransitionLog(filepath.Join(opts.Dir, "state", "transitions"))}
	// Without -n ipmi_sim reads commands on stdin and writes its message
	// trace (-d) on stdout; an open pipe keeps it from reading EOF.
	s.cmd = exec.Command(bin, "-c", "lan.conf", "-f", "bmc.emu", "-s", "state", "-d")
	s.cmd.Dir = opts.Dir
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("ipmi_sim stdin: %w", err)
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("ipmi_sim stdout: %w", err)
	}
	s.cmd.Stderr = s.cmd.Stdout
	// Its own process group, which a hosted host's program joins: Stop
	// ends them all with one signal. The parent-death signal ends
	// ipmi_sim with the test process even when that is killed, and the
	// chassis control script's watchdog then ends the host.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start ipmi_sim: %w", err)
	}
	go s.watch(out)
	go s.transitions.follow(s.exited)
	if err := s.connectConsole(consolePort); err != nil {
		_ = s.kill()
		return nil, err
	}
	// Trace every message, so tests can count the commands the BMC got.
	// The trace goes to every console; watch reads it on stdout (where a
	// prompt may precede a line), and Command skips it on the TCP console.
	if _, err := io.WriteString(s.stdin, "debug msg\n"); err != nil {
		_ = s.kill()
		return nil, fmt.Errorf("enable ipmi_sim message trace: %w", err)
	}
	return s, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// freePort asks the kernel for a free loopback port. Another process could
// take it before ipmi_sim binds it: Start tries again then.
func freePort(network string) (int, error) {
	if network == "udp" {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find a free UDP port: %w", err)
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free TCP port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func writeFiles(opts Options, port, consolePort int) error {
	if err := os.MkdirAll(filepath.Join(opts.Dir, "state"), 0o700); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}
	script, _ := files.ReadFile("files/chassis_control")
	emu, _ := files.ReadFile("files/bmc.emu")
	tmpl := template.Must(template.ParseFS(files, "files/lan.conf.tmpl"))
	var conf bytes.Buffer
	chassisControl := filepath.Join(opts.Dir, "chassis_control")
	if opts.NoChassisControl {
		chassisControl = ""
	}
	guid, err := smbiosGUID(cmpOr(opts.UUID, DefaultUUID))
	if err != nil {
		return err
	}
	if err := tmpl.Execute(&conf, map[string]any{
		"Port": port, "ConsolePort": consolePort, "Username": opts.Username, "Password": opts.Password,
		"ChassisControl": chassisControl, "StateDir": filepath.Join(opts.Dir, "state"),
		"GUID": guid,
	}); err != nil {
		return fmt.Errorf("render lan.conf: %w", err)
	}
	inv, err := inventoryEmu(opts)
	if err != nil {
		return err
	}
	for name, content := range map[string][]byte{"lan.conf": conf.Bytes(), "bmc.emu": emu, "inventory.emu": []byte(inv)} {
		if err := os.WriteFile(filepath.Join(opts.Dir, name), content, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	if err := os.WriteFile(filepath.Join(opts.Dir, "chassis_control"), script, 0o700); err != nil {
		return fmt.Errorf("write chassis_control: %w", err)
	}
	return writeHost(opts)
}

// traced finds the NetFn and command of a traced request.
var traced = regexp.MustCompile(`netfn=(0x[0-9a-f]+) cmd=(0x[0-9a-f]+)`)

// watch reads ipmi_sim's output until it exits, recording every request
// the BMC received in a session, and the Chassis Control requests (NetFn
// 0x00, command 0x02) apart. A traced request is "Receive message:" (maybe
// after a prompt), a line with netfn and cmd, a line with rq_lun and
// rq_seq, and a line of data bytes (empty without data).
func (s *Sim) watch(out io.Reader) {
	defer close(s.exited)
	sc := bufio.NewScanner(out)
	prev, pending := "", 0
	var msg Message
	for sc.Scan() {
		line := sc.Text()
		s.outMu.Lock()
		s.tail = append(s.tail, line)
		if len(s.tail) > 40 {
			s.tail = s.tail[1:]
		}
		switch {
		case pending > 1:
			pending--
		case pending == 1:
			pending = 0
			msg.Data, msg.At = strings.TrimSpace(line), time.Now()
			s.messages = append(s.messages, msg)
			if bit, ok := bootFlagsEFI(msg); ok {
				s.noteBootFlags(bit)
			}
			if f := strings.Fields(line); msg.NetFn == 0 && msg.Cmd == 2 && len(f) > 0 {
				if b, err := strconv.ParseUint(f[0], 16, 8); err == nil {
					s.controls = append(s.controls, Control{Byte: byte(b), At: msg.At})
				}
			}
		case strings.HasSuffix(prev, "Receive message:"):
			if m := traced.FindStringSubmatch(line); m != nil {
				netfn, _ := strconv.ParseUint(m[1], 0, 8)
				cmd, _ := strconv.ParseUint(m[2], 0, 8)
				msg, pending = Message{NetFn: uint8(netfn), Cmd: uint8(cmd)}, 2
			}
		}
		s.outMu.Unlock()
		prev = line
	}
	_ = s.cmd.Wait()
}

// bootFlagsEFI reads a Set System Boot Options request of the boot flags
// (parameter 5): whether its EFI bit (bit 5 of the first flags byte) is
// set.
func bootFlagsEFI(m Message) (efi, ok bool) {
	f := strings.Fields(m.Data)
	if m.NetFn != 0 || m.Cmd != 0x08 || len(f) < 2 {
		return false, false
	}
	param, err := strconv.ParseUint(f[0], 16, 8)
	if err != nil || param&0x7f != 5 {
		return false, false
	}
	flags, err := strconv.ParseUint(f[1], 16, 8)
	if err != nil {
		return false, false
	}
	return flags&0x20 != 0, true
}

// noteBootFlags appends the firmware a boot flags request asked for to the
// state directory's boot-flags, one line each, for the chassis control of
// a UEFIOnly host.
func (s *Sim) noteBootFlags(efi bool) {
	line := "legacy\n"
	if efi {
		line = "efi\n"
	}
	f, err := os.OpenFile(filepath.Join(s.dir, "state", "boot-flags"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		s.tail = append(s.tail, "ipmisim: record the boot flags: "+err.Error())
		return
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		s.tail = append(s.tail, "ipmisim: record the boot flags: "+err.Error())
	}
}

// ChassisControls returns the Chassis Control requests the BMC received, as
// their control byte (0 down, 1 up, 2 cycle, 3 hard reset, 5 soft off).
func (s *Sim) ChassisControls() []byte {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	out := make([]byte, 0, len(s.controls))
	for _, c := range s.controls {
		out = append(out, c.Byte)
	}
	return out
}

// Control is one Chassis Control request: its control byte, and when the
// BMC's trace showed it.
type Control struct {
	Byte byte
	At   time.Time
}

// Message is one request the BMC received in a session: its NetFn,
// command and data bytes (hex, as the trace prints them).
type Message struct {
	NetFn, Cmd uint8
	Data       string
	At         time.Time
}

// Messages returns every request the BMC received in a session, in order.
// The session setup (RMCP+ open session and RAKP) is not among them: the
// relay sees it.
func (s *Sim) Messages() []Message {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	return append([]Message(nil), s.messages...)
}

// ChassisControlLog returns the Chassis Control requests with their times.
func (s *Sim) ChassisControlLog() []Control {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	return append([]Control(nil), s.controls...)
}

// Output returns the last lines ipmi_sim printed.
func (s *Sim) Output() string {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	return strings.Join(s.tail, "\n")
}

// PowerOn reads the host's power: the power file, or whether the host's
// program runs.
func (s *Sim) PowerOn() (bool, error) {
	if s.hosted {
		return s.hostRunning(), nil
	}
	b, err := os.ReadFile(filepath.Join(s.dir, "state", "power"))
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read power state: %w", err)
	}
	return strings.TrimSpace(string(b)) == "1", nil
}

// SetPower sets the power state directly, as the power button would,
// without a command reaching the BMC; a start boots with the device set,
// as any start does, and is a transition like the others. A hosted host is
// powered through IPMI only.
func (s *Sim) SetPower(on bool) error {
	if s.hosted {
		return errors.New("ipmisim: the host is a program; power it through IPMI")
	}
	was, err := s.PowerOn()
	if err != nil {
		return err
	}
	v := "0\n"
	if on {
		v = "1\n"
	}
	if err := os.WriteFile(filepath.Join(s.dir, "state", "power"), []byte(v), 0o600); err != nil {
		return fmt.Errorf("set power state: %w", err)
	}
	if on == was {
		return nil
	}
	return s.recordButton(on)
}
