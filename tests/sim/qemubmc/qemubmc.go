package qemubmc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// Options configure a BMC and its machine.
type Options struct {
	// BMC configures the Redfish service. VirtualMedia defaults to
	// bmcsim.VirtualMediaOnManager; the hardware's first NIC becomes the
	// machine's NIC (MAC), its UUID the machine's SMBIOS UUID.
	BMC bmcsim.Options
	// MAC is the machine's one NIC, the server's management NIC.
	MAC string
	// Dir holds a folder per life of the machine (QEMU's log, the serial
	// console, the capture of its network).
	Dir string
	// Guest is the one address the machine reaches (the boot endpoint as
	// the machine knows it, in QEMU's user network 10.0.2.0/24), and Host
	// where QEMU forwards it on this machine (host:port).
	Guest netip.AddrPort
	Host  string
	// MapURL turns the URL of an image the BMC was told to mount into
	// one the BMC reaches: a URL naming Guest (an address only the
	// machine reaches) is mapped to Host by default.
	MapURL func(string) string
	// MemoryMiB is the machine's memory (default 256: OVMF and iPXE).
	MemoryMiB int
}

func (o *Options) uuid() string { return o.BMC.Hardware.UUID }

func (o *Options) parseGuest(guest string) error {
	ap, err := netip.ParseAddrPort(guest)
	if err != nil {
		return fmt.Errorf("guest address: %w", err)
	}
	o.Guest = ap
	return nil
}

// guestToHost maps an http URL naming Guest (its port said or implied)
// to Host.
func (o *Options) guestToHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" {
		return raw
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	if u.Hostname() != o.Guest.Addr().String() || port != strconv.Itoa(int(o.Guest.Port())) {
		return raw
	}
	u.Host = o.Host
	return u.String()
}

// Life is one run of the machine, from a power-on to the power going
// off, and when each step of its start happened.
type Life struct {
	// Dir holds qemu.log, serial.log and net.pcap.
	Dir string
	// PoweredOn is when the BMC took the power-on; ImageRead when it had
	// read the image it mounts; Running when the machine left its pause
	// with the medium in the drive; Off when the power went off (zero
	// while on).
	PoweredOn, ImageRead, Running, Off time.Time
	// Boot is the override the machine started with, Image the URL it
	// booted from (for Boot "Cd").
	Boot, Image string
	// QMP are the commands the BMC gave the machine, in order.
	QMP []string
}

// Capture is the file of the life's network capture (QEMU's filter-dump).
func (l Life) Capture() string { return filepath.Join(l.Dir, "net.pcap") }

// Serial is the life's serial console so far, without terminal escapes.
func (l Life) Serial() string { return serialText(l.Dir) }

// BMC is a Redfish BMC (bmcsim's) whose host is a QEMU machine under
// OVMF: what the BMC is told is done to the machine over QMP.
type BMC struct {
	// Sim is the Redfish service, Server where it listens.
	Sim    *bmcsim.BMC
	Server *bmcsim.Server

	opts   Options
	events chan event
	stop   chan struct{}
	done   chan struct{}

	mu    sync.Mutex
	media []MediaChange
	lives []*Life
	vm    *machine
	errs  []error
}

// MediaChange is a change of the virtual CD the BMC was told of.
type MediaChange struct {
	At       time.Time
	Inserted bool
	Image    string
}

// MediaChanges returns the virtual CD's changes so far, in order.
func (b *BMC) MediaChanges() []MediaChange {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]MediaChange(nil), b.media...)
}

// event is one thing the BMC was told, applied to the machine in order.
type event struct {
	power *bmcsim.PowerTransition
	media *bmcsim.Media
}

// New starts a BMC whose host is off, with its machine's folder under
// opts.Dir. Close it to end its machine.
func New(opts Options) (*BMC, error) {
	if opts.BMC.Hardware == nil {
		hw := bmcsim.DefaultHardware()
		opts.BMC.Hardware = &hw
	}
	hw := *opts.BMC.Hardware
	hw.NICs = append([]bmcsim.NIC(nil), hw.NICs...)
	if len(hw.NICs) == 0 {
		hw.NICs = []bmcsim.NIC{{ID: "NIC1", SpeedMbps: 25000}}
	}
	hw.NICs[0].MAC = opts.MAC
	opts.BMC.Hardware = &hw
	if opts.BMC.VirtualMedia == bmcsim.VirtualMediaNone {
		opts.BMC.VirtualMedia = bmcsim.VirtualMediaOnManager
	}
	if opts.MemoryMiB == 0 {
		opts.MemoryMiB = 256
	}
	if opts.MapURL == nil {
		opts.MapURL = opts.guestToHost
	}
	sim := bmcsim.New(opts.BMC)
	if err := sim.SetPowerState("Off"); err != nil {
		return nil, err
	}
	srv, err := bmcsim.NewServer(sim, "")
	if err != nil {
		return nil, err
	}
	b := &BMC{Sim: sim, Server: srv, opts: opts, events: make(chan event, 64), stop: make(chan struct{}), done: make(chan struct{})}
	// The hooks run on the request's goroutine: a BMC answers the request
	// at once and acts on its host afterwards, so the machine is driven
	// from a goroutine of its own, in the order the BMC was told.
	sim.OnPowerTransition(func(p bmcsim.PowerTransition) { b.events <- event{power: &p} })
	sim.OnMediaChange(func(slot string, m bmcsim.Media) {
		if slot == bmcsim.MediaSlotCD {
			b.mu.Lock()
			b.media = append(b.media, MediaChange{At: time.Now(), Inserted: m.Inserted, Image: m.Image})
			b.mu.Unlock()
			b.events <- event{media: &m}
		}
	})
	go b.drive()
	return b, nil
}

// Close ends the machine (as a power loss) and the Redfish service.
func (b *BMC) Close() error {
	close(b.stop)
	<-b.done
	return b.Server.Close()
}

// Lives returns every life of the machine so far, the last one current
// while the machine is on.
func (b *BMC) Lives() []Life {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Life, 0, len(b.lives))
	for _, l := range b.lives {
		c := *l
		c.QMP = append([]string(nil), l.QMP...)
		out = append(out, c)
	}
	return out
}

// Running says whether a machine runs.
func (b *BMC) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.vm != nil
}

// Err is every failure to carry out what the BMC was told, joined.
func (b *BMC) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return errors.Join(b.errs...)
}

// Commands are the requests that asked the BMC to change something
// (POST and PATCH but the login), as "POST /redfish/v1/...", in order.
func (b *BMC) Commands() []string {
	var out []string
	for _, r := range b.Sim.RequestLog() {
		if (strings.HasPrefix(r, "POST ") || strings.HasPrefix(r, "PATCH ")) && !strings.Contains(r, "/SessionService/Sessions") {
			out = append(out, r)
		}
	}
	return out
}

func (b *BMC) drive() {
	defer close(b.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for {
		select {
		case <-b.stop:
			b.powerOff()
			return
		case ev := <-b.events:
			var err error
			switch {
			case ev.power != nil:
				err = b.applyPower(ctx, *ev.power)
			case ev.media != nil:
				err = b.applyMedia(ctx, *ev.media)
			}
			if err != nil {
				b.mu.Lock()
				b.errs = append(b.errs, err)
				b.mu.Unlock()
			}
		}
	}
}

// applyPower carries out a power transition: a start runs a new machine
// and boots it as the override says; a restart resets the running one
// (the firmware reads the boot order and the drive afresh); off ends it.
func (b *BMC) applyPower(ctx context.Context, p bmcsim.PowerTransition) error {
	switch {
	case p.Change == bmcsim.PowerChangeOff:
		b.powerOff()
		return nil
	case p.Change == bmcsim.PowerChangeRestart && b.current() != nil:
		b.mu.Lock()
		life := b.lives[len(b.lives)-1]
		life.Boot, life.Image = p.Boot, ""
		b.mu.Unlock()
		if err := b.loadForStart(ctx, p, life); err != nil {
			return err
		}
		if err := b.send("system_reset", nil); err != nil {
			return fmt.Errorf("restart: %w", err)
		}
		return nil
	}
	if b.current() != nil {
		return nil // already on
	}
	b.mu.Lock()
	life := &Life{Dir: filepath.Join(b.opts.Dir, fmt.Sprintf("life-%d", len(b.lives)+1)), PoweredOn: p.At, Boot: p.Boot}
	b.lives = append(b.lives, life)
	b.mu.Unlock()
	m, err := startMachine(ctx, &b.opts, life.Dir)
	if err != nil {
		return fmt.Errorf("power on: %w", err)
	}
	b.mu.Lock()
	b.vm = m
	b.mu.Unlock()
	if err := b.loadForStart(ctx, p, life); err != nil {
		return err
	}
	if err := b.send("cont", nil); err != nil {
		return fmt.Errorf("power on: %w", err)
	}
	b.mu.Lock()
	life.Running = time.Now()
	b.mu.Unlock()
	return nil
}

// loadForStart puts the mounted image in the drive for a start from Cd,
// and leaves the drive empty for any other: the machine has no disk, and
// a start that is not from the CD must not boot the image.
func (b *BMC) loadForStart(ctx context.Context, p bmcsim.PowerTransition, life *Life) error {
	if p.Boot != "Cd" || p.Media == "" {
		if err := b.send("eject", ejectArgs); err != nil {
			return fmt.Errorf("start not from Cd: %w", err)
		}
		return nil
	}
	file, err := b.readImage(ctx, p.Media, life.Dir)
	if err != nil {
		return err
	}
	b.mu.Lock()
	life.ImageRead, life.Image = time.Now(), p.Media
	b.mu.Unlock()
	if err := b.send("blockdev-change-medium", changeMediumArgs(file)); err != nil {
		return fmt.Errorf("start from Cd: %w", err)
	}
	return nil
}

// applyMedia mounts or ejects the image in a running machine's drive; a
// machine that is off gets it at its next start.
func (b *BMC) applyMedia(ctx context.Context, media bmcsim.Media) error {
	m := b.current()
	if m == nil {
		return nil
	}
	if !media.Inserted {
		if err := b.send("eject", ejectArgs); err != nil {
			return fmt.Errorf("eject: %w", err)
		}
		// A guest can hold a tray shut; the forced eject must still have
		// emptied the drive.
		if left, err := m.qmp.cdMedium(); err != nil || left != "" {
			return fmt.Errorf("eject: the drive still holds %q (%v)", left, err)
		}
		return nil
	}
	file, err := b.readImage(ctx, media.Image, m.dir)
	if err != nil {
		return err
	}
	if err := b.send("blockdev-change-medium", changeMediumArgs(file)); err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	return nil
}

// readImage reads the image at url (mapped to where the BMC reaches it)
// into a file of dir, as a BMC's virtual CD reads its URL. A boot
// endpoint busy with other images answers 503: asked again, for a while.
func (b *BMC) readImage(ctx context.Context, url, dir string) (string, error) {
	src := b.opts.MapURL(url)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		file, retry, err := fetch(ctx, src, dir)
		if err == nil || !retry {
			return file, err
		}
		select {
		case <-ctx.Done():
			return "", err
		case <-tick.C:
		}
	}
}

// fetch reads src into dir/virtual-cd.iso; retry says the answer was one
// to ask again after.
func fetch(ctx context.Context, src, dir string) (string, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return "", false, fmt.Errorf("image URL: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", true, fmt.Errorf("read image: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return "", resp.StatusCode == http.StatusServiceUnavailable, fmt.Errorf("read image: %s", resp.Status)
	}
	path := filepath.Join(dir, "virtual-cd.iso")
	// A new file each time: the drive may still hold the old one.
	_ = os.Remove(path)
	f, err := os.Create(path)
	if err != nil {
		return "", false, fmt.Errorf("image file: %w", err)
	}
	_, err = io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", true, fmt.Errorf("read image: %w", err)
	}
	return path, false, nil
}

// send gives the running machine a QMP command, recorded in its life.
func (b *BMC) send(cmd string, args any) error {
	b.mu.Lock()
	m := b.vm
	life := b.lives[len(b.lives)-1]
	life.QMP = append(life.QMP, cmd)
	b.mu.Unlock()
	return m.qmp.run(cmd, args, nil)
}

func (b *BMC) current() *machine {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.vm
}

// powerOff ends the running machine, if any, and waits for it.
func (b *BMC) powerOff() {
	m := b.current()
	if m == nil {
		return
	}
	b.mu.Lock()
	b.lives[len(b.lives)-1].QMP = append(b.lives[len(b.lives)-1].QMP, "quit")
	b.mu.Unlock()
	m.quit()
	b.mu.Lock()
	b.vm = nil
	b.lives[len(b.lives)-1].Off = time.Now()
	b.mu.Unlock()
}
