package bmcdriver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
)

// Event types of the machine events this driver makes.
const (
	TypeHealth = "Health"
	TypeLog    = "SystemEventLog"
)

// cursor is what the chain stores for a BMC: the event log's own cursor,
// the health each subsystem was last reported in, and how many health
// changes were forwarded (which numbers the next one). It is opaque to
// the chain.
type cursor struct {
	Version  int               `json:"v"`
	Protocol bmc.Protocol      `json:"p"`
	Log      string            `json:"l,omitempty"`
	Health   map[string]string `json:"h,omitempty"`
	Changes  int               `json:"n,omitempty"`
}

const cursorVersion = 1

// encode writes the cursor as JSON: the status field is a string.
func (c cursor) encode() string {
	b, _ := json.Marshal(c) // strings and ints always marshal
	return string(b)
}

// decodeCursor reads s ("" is a fresh start). A cursor of the other
// protocol (the Inventory's port, and so its protocol, was changed) keeps its health but
// not its log position, which only the old protocol's log understands.
func decodeCursor(s string, p bmc.Protocol) (cursor, error) {
	c := cursor{Version: cursorVersion, Protocol: p}
	if s == "" {
		return c, nil
	}
	if err := json.Unmarshal([]byte(s), &c); err != nil || c.Version != cursorVersion {
		return cursor{}, fmt.Errorf("the event cursor in the status was not written by the BMC driver; clear status.eventCursor to start over")
	}
	if c.Protocol != p {
		c.Protocol, c.Log = p, ""
	}
	return c, nil
}

// healthEvents compares a health reading with the one cur remembers and
// returns one event per subsystem whose change matters: a part that is not
// OK, seen for the first time, and any change that involves Warning or
// Critical. Between OK and Unknown (a sensor without a reading) nothing is
// said. cur moves past each; an event's ID is the machine's key and the
// change's number, so the same change forwarded twice has the same ID.
func healthEvents(cur *cursor, h bmc.Health, key string, now time.Time) []machine.Event {
	var out []machine.Event
	for _, s := range bmc.Subsystems {
		sh := h.Get(s)
		value := string(sh.State) + "\x00" + sh.Message
		prev, seen := cur.Health[string(s)]
		if seen && prev == value {
			continue
		}
		if cur.Health == nil {
			cur.Health = map[string]string{}
		}
		cur.Health[string(s)] = value
		prevState := bmc.StateOK
		if seen {
			prevState = bmc.State(prev[:max(0, indexNul(prev))])
		}
		if quiet(prevState) && quiet(sh.State) {
			continue
		}
		cur.Changes++
		msg := fmt.Sprintf("%s is %s", s, sh.State)
		if sh.Message != "" && sh.State != bmc.StateOK {
			msg += " (" + sh.Message + ")"
		}
		if seen {
			msg += fmt.Sprintf(", was %s", prevState)
		}
		out = append(out, machine.Event{
			ID:       "health/" + key + "/" + strconv.Itoa(cur.Changes),
			Time:     now,
			Type:     TypeHealth,
			Message:  msg,
			Severity: severity(sh.State),
			Cursor:   cur.encode(),
		})
	}
	return out
}

func indexNul(s string) int {
	for i := range len(s) {
		if s[i] == 0 {
			return i
		}
	}
	return len(s)
}

func quiet(s bmc.State) bool { return s == bmc.StateOK || s == bmc.StateUnknown }

func severity(s bmc.State) machine.Severity {
	if s == bmc.StateWarning || s == bmc.StateCritical {
		return machine.SeverityWarning
	}
	return machine.SeverityNormal
}

// logEvents turns new event log entries into events. Only the last one
// carries the log's next position: one before it carries the position the
// poll started from, so a pass that stops half-way reads the batch again,
// and the entries already forwarded are found by their IDs. An entry's ID
// joins its log (a Redfish BMC may keep several, each numbering its own
// records) and the BMC's record ID with a digest of its content, since a
// BMC numbers its records anew after the log is cleared.
func logEvents(cur cursor, entries []bmc.LogEntry, next string) []machine.Event {
	out := make([]machine.Event, 0, len(entries))
	for i, e := range entries {
		c := cur
		if i == len(entries)-1 {
			c.Log = next
		}
		id := "log/" + e.ID + "/" + entryDigest(e)
		if e.Log != "" {
			id = "log/" + e.Log + "/" + e.ID + "/" + entryDigest(e)
		}
		out = append(out, machine.Event{
			ID:       id,
			Time:     e.Time,
			Type:     TypeLog,
			Message:  e.Message,
			Severity: severity(e.Severity),
			Cursor:   c.encode(),
		})
	}
	return out
}

func entryDigest(e bmc.LogEntry) string {
	h := sha256.New()
	var unix int64
	if !e.Time.IsZero() {
		unix = e.Time.Unix()
	}
	for _, s := range []string{strconv.FormatInt(unix, 10), string(e.Severity), e.Message} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:6])
}
