package ipmisim

import (
	"bytes"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// bootTarget names an ipmi_sim boot device in Redfish's words, so a
// simulated server reads both kinds of BMC alike.
func bootTarget(device string) string {
	switch device {
	case "pxe":
		return bmcsim.BootPxe
	case "default":
		return bmcsim.BootHdd
	case "cdrom":
		return "Cd"
	case "bios":
		return "BiosSetup"
	}
	return bmcsim.BootNone
}

// followInterval is how often the transitions the chassis control script
// appends are read: the script runs in ipmi_sim, outside this process.
const followInterval = 20 * time.Millisecond

// transitionLog reads the script's transitions file as it grows.
type transitionLog struct {
	path string

	mu      sync.Mutex
	offset  int64
	partial []byte
	seen    []bmcsim.PowerTransition
	hooks   []func(bmcsim.PowerTransition)
	// notifyMu keeps the hooks' calls in order.
	notifyMu sync.Mutex
	// followed is closed once follow has read the file for the last time,
	// so a stopped Sim reports every transition its script wrote.
	followed chan struct{}
}

func newTransitionLog(path string) *transitionLog {
	return &transitionLog{path: path, followed: make(chan struct{})}
}

// follow reads new transitions until done is closed, and once more then.
func (l *transitionLog) follow(done <-chan struct{}) {
	defer close(l.followed)
	t := time.NewTicker(followInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			l.read()
			return
		case <-t.C:
			l.read()
		}
	}
}

func (l *transitionLog) read() {
	l.notifyMu.Lock()
	defer l.notifyMu.Unlock()
	l.mu.Lock()
	fresh := l.readLocked()
	hooks := slices.Clone(l.hooks)
	l.mu.Unlock()
	for _, t := range fresh {
		for _, fn := range hooks {
			fn(t)
		}
	}
}

func (l *transitionLog) readLocked() []bmcsim.PowerTransition {
	f, err := os.Open(l.path)
	if err != nil {
		return nil // none yet
	}
	defer f.Close()
	if _, err := f.Seek(l.offset, io.SeekStart); err != nil {
		return nil
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil
	}
	l.offset += int64(len(b))
	b = append(l.partial, b...)
	end := bytes.LastIndexByte(b, '\n') + 1
	l.partial = slices.Clone(b[end:])
	var fresh []bmcsim.PowerTransition
	for _, line := range strings.Split(string(b[:end]), "\n") {
		if t, ok := parseTransition(line); ok {
			fresh = append(fresh, t)
		}
	}
	l.seen = append(l.seen, fresh...)
	return fresh
}

// parseTransition reads "<unix ms> <change> <boot|-> <cause>".
func parseTransition(line string) (bmcsim.PowerTransition, bool) {
	f := strings.SplitN(strings.TrimSpace(line), " ", 4)
	if len(f) < 4 {
		return bmcsim.PowerTransition{}, false
	}
	ms, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return bmcsim.PowerTransition{}, false
	}
	t := bmcsim.PowerTransition{Change: bmcsim.PowerChange(f[1]), Cause: f[3], At: time.UnixMilli(ms)}
	if t.Change != bmcsim.PowerChangeOff {
		t.Boot = bootTarget(f[2])
	}
	return t, true
}

// OnPowerTransition adds fn to the functions called with every change of
// the host's power the chassis control makes, in order, on the Sim's own
// goroutine, within about 20 ms of the change. A power cycle is an Off and
// an On; a hard reset of a host that is on is a Restart. fn must not block
// for long.
func (s *Sim) OnPowerTransition(fn func(bmcsim.PowerTransition)) {
	s.transitions.mu.Lock()
	defer s.transitions.mu.Unlock()
	s.transitions.hooks = append(s.transitions.hooks, fn)
}

// PowerTransitions returns the transitions seen so far, in order; one
// just made may take a moment to appear (poll for it), except after Stop,
// which returns once every transition written has been read.
func (s *Sim) PowerTransitions() []bmcsim.PowerTransition {
	s.transitions.mu.Lock()
	defer s.transitions.mu.Unlock()
	return slices.Clone(s.transitions.seen)
}
