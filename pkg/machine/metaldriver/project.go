package metaldriver

import (
	"sort"
	"sync"
	"time"

	"github.com/harvester/harvester-equinix-addon/pkg/machine"
)

// projectState is what the driver knows of one project's log.
type projectState struct {
	id string

	mu sync.Mutex
	// loaded is set once the log position was read from the store.
	loaded bool
	// position is the time up to which every event was listed and, for
	// the devices someone asked about, forwarded; saved is what the store
	// holds.
	position, saved time.Time
	// newest is the time of the newest event listed so far.
	newest time.Time
	// listed is set after the first successful list since the start, which
	// began at listedFrom (the driver's clock).
	listed                       bool
	listedFrom                   time.Time
	nextEvents, nextTerminations time.Time
	askTerminations              bool
	devices                      map[string]*deviceLog
	// terminations maps the devices to be taken back to that time, as the
	// last termination list said.
	terminations map[string]time.Time
}

func newProjectState(id string) *projectState {
	return &projectState{id: id, devices: map[string]*deviceLog{}, terminations: map[string]time.Time{}}
}

// deviceLog is the events of one device not yet forwarded.
type deviceLog struct {
	entries []entry
	ids     map[string]bool
	// acked is the cursor the device's owner last passed: everything it
	// covers has been forwarded. asked says whether anyone ever asked.
	acked cursor
	asked bool
}

type entry struct {
	ev       machine.Event
	listedAt time.Time
}

func (ps *projectState) due(now time.Time, at *time.Time) time.Duration {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return at.Sub(now)
}

func (ps *projectState) schedule(at *time.Time, when time.Time) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	*at = when
}

func (ps *projectState) takeTerminationAsk() bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	asked := ps.askTerminations
	ps.askTerminations = false
	return asked
}

// deviceLocked returns a device's log, creating it.
func (ps *projectState) deviceLocked(id string) *deviceLog {
	dl, ok := ps.devices[id]
	if !ok {
		dl = &deviceLog{ids: map[string]bool{}}
		ps.devices[id] = dl
	}
	return dl
}

// addLocked keeps an event unless it was kept or forwarded already, and
// reports whether it is news.
func (dl *deviceLog) addLocked(ev machine.Event, now time.Time) bool {
	if dl.ids[ev.ID] || dl.acked.covers(ev) {
		return false
	}
	dl.ids[ev.ID] = true
	dl.entries = append(dl.entries, entry{ev: ev, listedAt: now})
	sort.SliceStable(dl.entries, func(i, j int) bool { return before(dl.entries[i].ev, dl.entries[j].ev) })
	if over := len(dl.entries) - maxBuffered; over > 0 {
		for _, e := range dl.entries[:over] {
			delete(dl.ids, e.ev.ID)
		}
		dl.entries = append([]entry(nil), dl.entries[over:]...)
	}
	return true
}

// ackLocked records that everything c covers was forwarded.
func (dl *deviceLog) ackLocked(c cursor) {
	dl.asked = true
	dl.acked = c
	kept := dl.entries[:0]
	for _, e := range dl.entries {
		if c.covers(e.ev) {
			delete(dl.ids, e.ev.ID)
			continue
		}
		kept = append(kept, e)
	}
	dl.entries = kept
}

// afterLocked returns the kept events c does not cover, oldest first, each
// with the cursor that covers it and those before it.
func (dl *deviceLog) afterLocked(c cursor) []machine.Event {
	var out []machine.Event
	running := c
	for _, e := range dl.entries {
		if c.covers(e.ev) {
			continue
		}
		running = running.advance(e.ev)
		ev := e.ev
		ev.Cursor = running.String()
		out = append(out, ev)
	}
	return out
}

// trimLocked drops the events of devices nobody asked about once they are
// older than hold: a foreign device, or an Instance gone.
func (ps *projectState) trimLocked(now time.Time, hold time.Duration) {
	for id, dl := range ps.devices {
		if dl.asked {
			continue
		}
		kept := dl.entries[:0]
		for _, e := range dl.entries {
			if now.Sub(e.listedAt) < hold {
				kept = append(kept, e)
			} else {
				delete(dl.ids, e.ev.ID)
			}
		}
		dl.entries = kept
		if len(kept) == 0 {
			delete(ps.devices, id)
		}
	}
}

// advancePositionLocked moves the log position to the oldest event still
// waiting to be forwarded (of a device someone asked about, or one nobody
// asked about yet that was listed less than hold ago), or else to the
// newest event listed. It never moves back.
func (ps *projectState) advancePositionLocked(now time.Time, hold time.Duration) {
	pos := ps.newest
	for _, dl := range ps.devices {
		for _, e := range dl.entries {
			if dl.asked || now.Sub(e.listedAt) < hold {
				if e.ev.Time.Before(pos) {
					pos = e.ev.Time
				}
				break // entries are oldest first
			}
		}
	}
	if pos.After(ps.position) {
		ps.position = pos
	}
}
