package virtualmedia

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/bootmedia"
	"github.com/harvester/harvester-equinix-addon/tests/sim/qemubmc"
)

// The machine's CD drive: its block backend and its device.
const (
	cdDrive  = "cd0"
	cdDevice = "cdrom0"
)

const (
	ovmfCode = "/usr/share/OVMF/OVMF_CODE_4M.fd"
	ovmfVars = "/usr/share/OVMF/OVMF_VARS_4M.fd"
	// The guest's network: QEMU's user networking answers for 10.0.2.2
	// (its gateway) and forwards the boot endpoint's address to the test.
	guestMAC      = "52:54:00:39:00:01"
	guestUUID     = "39391e5a-6b0e-4c39-9d39-000000000039"
	guestAddress  = "10.0.2.15/24"
	guestGateway  = "10.0.2.2"
	endpointAddr  = "10.0.2.100"
	claimNonce    = "c39-nonce"
	chainedMarker = "VIRTUAL-MEDIA-CHAINED"
)

// requireTools finds QEMU, OVMF and the boot loaders, or skips the test
// (fails it under CI=true, where the scripts install them).
func requireTools(t *testing.T, uefi bool) *bootmedia.Loaders {
	t.Helper()
	missing := func(msg string) {
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		missing("qemu-system-x86_64 is not installed (Debian package qemu-system-x86; scripts/vm-tools installs it)")
	}
	if uefi {
		for _, f := range []string{ovmfCode, ovmfVars} {
			if _, err := os.Stat(f); err != nil {
				missing("OVMF, the UEFI firmware, is not installed (Debian package ovmf; scripts/vm-tools installs it)")
			}
		}
	}
	dir := os.Getenv("BOOT_LOADERS_DIR")
	if dir == "" {
		missing("BOOT_LOADERS_DIR is not set: scripts/test sets it to the folder scripts/boot-loaders fetches")
	}
	l, err := bootmedia.LoadLoaders(dir)
	require.NoError(t, err)
	return l
}

// endpoint is the test's boot endpoint: it answers the claim's URL with a
// script that says it ran, and records what was asked.
type endpoint struct {
	mu    sync.Mutex
	reqs  []*http.Request
	got   chan struct{}
	once  sync.Once
	image string // the ISO served at imagePath, once set
}

// imagePath is where the endpoint serves the claim's image to the BMC.
const imagePath = "/claims/" + claimNonce + "/boot.iso"

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.reqs = append(e.reqs, r)
	image := e.image
	e.mu.Unlock()
	if r.URL.Path == imagePath && image != "" {
		// BMCs read virtual media in ranges: ServeContent answers them.
		f, err := os.Open(image)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		http.ServeContent(w, r, "boot.iso", st.ModTime(), f)
		return
	}
	if r.URL.Path != "/claims/"+claimNonce+"/boot.ipxe" {
		http.NotFound(w, r)
		return
	}
	fmt.Fprintf(w, "#!ipxe\necho %s ${ip}\nsleep 600\n", chainedMarker)
	e.once.Do(func() { close(e.got) })
}

func (e *endpoint) requests() []*http.Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*http.Request(nil), e.reqs...)
}

func startEndpoint(t *testing.T) (*endpoint, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	e := &endpoint{got: make(chan struct{})}
	// No idle timeout: QEMU's forward is one stream for the VM's life.
	srv := &http.Server{Handler: e, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return e, ln.Addr().(*net.TCPAddr).Port
}

// machine is one QEMU run booting the image from its CD drive.
type machine struct {
	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed when QEMU has exited
	err  error         // its exit, once done
}

// startMachine boots iso from the CD drive.
func startMachine(t *testing.T, iso string, uefi bool, port int) *machine {
	t.Helper()
	m := &machine{dir: t.TempDir()}
	drive := "if=none,id=" + cdDrive + ",media=cdrom,readonly=on,file=" + opt(iso)
	args := []string{"-n", "10", "qemu-system-x86_64",
		"-machine", "pc,accel=tcg", "-m", "256", "-smp", "1", "-nographic", "-monitor", "none",
		"-uuid", guestUUID,
		"-chardev", "file,id=s0,path=" + opt(filepath.Join(m.dir, "serial.log")), "-serial", "chardev:s0",
		// restrict=on: the guest reaches nothing but the forward to the
		// test's endpoint; QEMU still answers DHCP on this network if
		// asked, which is what the capture would show.
		"-netdev", "user,id=n0,restrict=on,guestfwd=tcp:" + endpointAddr + ":80-tcp:127.0.0.1:" + strconv.Itoa(port),
		// No ROM on the NIC: the firmware cannot boot from the network,
		// only from the CD; the image's iPXE drives the NIC itself.
		"-device", "virtio-net-pci,netdev=n0,romfile=,mac=" + guestMAC,
		"-object", "filter-dump,id=f0,netdev=n0,file=" + opt(filepath.Join(m.dir, "net.pcap")),
		"-drive", drive,
		"-device", "ide-cd,drive=" + cdDrive + ",id=" + cdDevice + ",bootindex=1",
	}
	if uefi {
		vars := filepath.Join(m.dir, "ovmf-vars.fd")
		b, err := os.ReadFile(ovmfVars)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(vars, b, 0o600))
		args = append(args,
			"-drive", "if=pflash,format=raw,readonly=on,file="+opt(ovmfCode),
			"-drive", "if=pflash,format=raw,file="+opt(vars))
	}
	m.cmd = exec.Command("nice", args...)
	out, err := os.Create(filepath.Join(m.dir, "qemu.log"))
	require.NoError(t, err)
	m.cmd.Stdout, m.cmd.Stderr = out, out
	require.NoError(t, m.cmd.Start())
	m.done = make(chan struct{})
	go func() { m.err = m.cmd.Wait(); close(m.done) }()
	t.Cleanup(func() {
		m.stop()
		_ = out.Close()
		if t.Failed() {
			q, _ := os.ReadFile(filepath.Join(m.dir, "qemu.log"))
			t.Logf("QEMU:\n%s\nserial console (end):\n%s", q, tail(m.serial(), 3000))
		}
	})
	return m
}

// stop ends QEMU with SIGTERM, which it takes as a clean exit: the
// capture file is complete after it.
func (m *machine) stop() {
	select {
	case <-m.done:
		return
	default:
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;?=]*[A-Za-z]`)

func (m *machine) serial() string {
	b, _ := os.ReadFile(filepath.Join(m.dir, "serial.log"))
	return ansi.ReplaceAllString(strings.ReplaceAll(string(b), "\r", ""), "")
}

// opt escapes a value inside a QEMU option list.
func opt(s string) string { return strings.ReplaceAll(s, ",", ",,") }

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// One image, built for either firmware, boots under UEFI and BIOS from a
// CD, applies the static address and fetches the claim's URL with the
// NIC's MAC and the machine's UUID, and the network sees no DHCP at all.
func TestVirtualMediaBootsWithoutDHCP(t *testing.T) {
	for _, tc := range []struct {
		name string
		uefi bool
	}{{"uefi", true}, {"bios", false}} {
		t.Run(tc.name, func(t *testing.T) {
			loaders := requireTools(t, tc.uefi)
			ep, port := startEndpoint(t)
			chain := "http://" + endpointAddr + "/claims/" + claimNonce + "/boot.ipxe"
			img, err := bootmedia.Build(bootmedia.Spec{
				Firmware: bmc.BootFirmwareAny, MAC: guestMAC, ChainURL: chain,
				Static: &bootmedia.StaticAddress{Address: netip.MustParsePrefix(guestAddress), Gateway: netip.MustParseAddr(guestGateway)},
			}, loaders, t.TempDir())
			require.NoError(t, err)

			start := time.Now()
			m := startMachine(t, img.Path, tc.uefi, port)
			select {
			case <-ep.got:
			case <-m.done:
				t.Fatalf("QEMU ended before the claim's URL was fetched: %v", m.err)
			case <-time.After(10 * time.Minute):
				t.Fatal("the claim's URL was not fetched within 10 minutes of power on")
			}
			t.Logf("claim URL fetched %s after power on (%s)", time.Since(start).Round(time.Second), tc.name)
			require.Eventually(t, func() bool { return strings.Contains(m.serial(), chainedMarker+" 10.0.2.15") },
				2*time.Minute, 200*time.Millisecond, "the chained script runs with the static address")
			m.stop()

			var claim *http.Request
			for _, r := range ep.requests() {
				if r.URL.Path == "/claims/"+claimNonce+"/boot.ipxe" {
					claim = r
				}
			}
			require.NotNil(t, claim)
			assert.Equal(t, guestMAC, claim.URL.Query().Get("mac"))
			assert.Equal(t, guestUUID, claim.URL.Query().Get("uuid"))
			assert.Contains(t, m.serial(), "Static address "+guestAddress)

			frames, err := qemubmc.CountFrames(filepath.Join(m.dir, "net.pcap"), time.Time{})
			require.NoError(t, err)
			t.Logf("capture: %d frames, %d DHCP, TCP %v", frames.Frames, frames.DHCP, frames.TCPTo)
			assert.Positive(t, frames.TCPTo[netip.MustParseAddrPort(endpointAddr+":80")], "the capture sees the fetch, so it sees the network")
			assert.Zero(t, frames.DHCP, "no DHCP packet on the machine's network")
		})
	}
}
