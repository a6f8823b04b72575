package metaldriver

import (
	"strings"
	"time"

	"github.com/harvester/harvester-equinix-addon/pkg/machine"
)

// maxCursorIDs bounds the IDs a cursor carries.
const maxCursorIDs = 200

// cursor marks what of one device's events has been forwarded: every event
// up to at, except those within skew before at, which count only when
// their IDs are listed. The API may list an event a little after an event
// with a later time, so the time alone would skip it.
type cursor struct {
	at  time.Time
	ids []string
}

// parseCursor reads a cursor; anything unreadable is the empty cursor
// (every kept event is news).
func parseCursor(s string) cursor {
	at, rest, _ := strings.Cut(s, " ")
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return cursor{}
	}
	c := cursor{at: t}
	if rest != "" {
		c.ids = strings.Split(rest, ",")
	}
	return c
}

func (c cursor) String() string {
	if c.at.IsZero() {
		return ""
	}
	s := c.at.UTC().Format(time.RFC3339Nano)
	if len(c.ids) > 0 {
		s += " " + strings.Join(c.ids, ",")
	}
	return s
}

// covers reports whether ev was forwarded.
func (c cursor) covers(ev machine.Event) bool {
	if c.at.IsZero() || ev.Time.After(c.at) {
		return false
	}
	if !ev.Time.After(c.at.Add(-skew)) {
		return true
	}
	for _, id := range c.ids {
		if id == ev.ID {
			return true
		}
	}
	return false
}

// advance returns the cursor that also covers ev.
func (c cursor) advance(ev machine.Event) cursor {
	out := cursor{at: c.at, ids: append([]string(nil), c.ids...)}
	if ev.Time.After(out.at) {
		if ev.Time.Sub(out.at) > skew {
			// Every ID listed so far is older than the new window.
			out.ids = nil
		}
		out.at = ev.Time
	}
	if !out.covers(ev) {
		out.ids = append(out.ids, ev.ID)
	}
	if len(out.ids) > maxCursorIDs {
		// The first listed were forwarded first: the oldest go.
		out.ids = out.ids[len(out.ids)-maxCursorIDs:]
	}
	return out
}

// before orders events by time, then ID.
func before(a, b machine.Event) bool {
	if !a.Time.Equal(b.Time) {
		return a.Time.Before(b.Time)
	}
	return a.ID < b.ID
}
