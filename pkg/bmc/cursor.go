package bmc

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// lastEntry is the last entry handed out of one log: its ID, its time in
// seconds (0 when it had none) and a digest of its content.
type lastEntry struct {
	ID     string `json:"i"`
	Unix   int64  `json:"t,omitempty"`
	Digest string `json:"d"`
}

func (a lastEntry) zero() bool { return a.ID == "" && a.Digest == "" }

func lastEntryOf(e LogEntry) lastEntry {
	return lastEntry{ID: e.ID, Unix: unixOrZero(e.Time), Digest: digest(e)}
}

// cursor is what the opaque cursor string carries: for a BMC with one log
// (the IPMI SEL), the last entry handed out and the log's epoch, a value
// that changes when the BMC clears the log (IPMI's last erase time); for a
// Redfish BMC, the last entry handed out of each log it reads, by the log's
// URI, since a BMC may keep several logs of hardware events and each moves
// on its own.
type cursor struct {
	Version  int      `json:"v"`
	Protocol Protocol `json:"p"`
	Epoch    string   `json:"e,omitempty"`
	lastEntry
	Logs map[string]lastEntry `json:"l,omitempty"`
}

// Cursor versions: 1 holds one last entry; 2 adds a last entry per log. A
// version 1 Redfish cursor (written when only the SEL was read) still
// reads: its last entry stands for every log until each has one of its own.
const (
	cursorVersion     = 1
	cursorVersionLogs = 2
)

func (c cursor) encode() string {
	b, _ := json.Marshal(c) // strings, ints and a map of them always marshal
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor parses s; "" is the zero cursor. A cursor written by the
// other protocol is refused, so a node whose BMC settings change gets a
// clear answer instead of a silent replay.
func decodeCursor(s string, p Protocol) (cursor, error) {
	if s == "" {
		return cursor{}, nil
	}
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || (c.Version != cursorVersion && c.Version != cursorVersionLogs) {
		return cursor{}, fmt.Errorf("the log cursor is not one this package wrote; reset it to \"\"")
	}
	if c.Protocol != p {
		return cursor{}, fmt.Errorf("the log cursor was written for %s, not %s; reset it to \"\"", c.Protocol, p)
	}
	return c, nil
}

// digest fingerprints an entry so that an ID reused after a clear, with
// other content, is not taken for the entry the cursor points at.
func digest(e LogEntry) string {
	h := sha256.New()
	for _, s := range []string{e.ID, strconv.FormatInt(unixOrZero(e.Time), 10), string(e.Severity), e.Message} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// newSince picks, from a whole log (oldest first), the entries after the
// last entry handed out:
//
//  1. No last entry: everything.
//  2. The last entry (same ID and digest) is in the log: what follows it.
//  3. The last entry is gone (cleared on a BMC without an epoch, or pushed
//     out of a log that wraps): entries at or after its time are new,
//     since a wrap drops the oldest first and a clear drops everything. Only
//     entries the BMC deleted one by one could be handed out twice this way.
//     Without times (an IPMI clock never set) everything is new.
func newSince(all []LogEntry, a lastEntry) []LogEntry {
	if a.zero() {
		return all
	}
	last := -1
	for i, e := range all {
		if e.ID == a.ID && digest(e) == a.Digest {
			last = i
		}
	}
	switch {
	case last >= 0:
		return all[last+1:]
	case a.Unix == 0:
		return all
	}
	var out []LogEntry
	for _, e := range all {
		if e.Time.IsZero() || e.Time.Unix() >= a.Unix {
			out = append(out, e)
		}
	}
	return out
}

// entriesAfter picks, from the whole of a BMC's only log, the entries after
// the cursor, and returns the next cursor. When the epoch changed, the log
// was cleared since the last poll, so every entry in it is new (entries
// written and cleared between two polls are lost; nothing can bring them
// back); otherwise newSince decides.
//
// The next cursor points at the newest entry returned, or stays where it
// was (with the new epoch) when nothing is new, so polling an unchanged log
// returns nothing and a restarted caller holding the cursor resumes exactly.
func entriesAfter(all []LogEntry, c cursor, p Protocol, epoch string) ([]LogEntry, string) {
	out := all
	if c.Epoch == epoch {
		out = newSince(all, c.lastEntry)
	}
	next := cursor{Version: cursorVersion, Protocol: p, Epoch: epoch, lastEntry: c.lastEntry}
	if len(out) > 0 {
		next.lastEntry = lastEntryOf(out[len(out)-1])
	}
	if next.zero() && next.Epoch == "" {
		return out, ""
	}
	return append([]LogEntry(nil), out...), next.encode()
}

// logsAfter does the same for a BMC with several logs, each from its own
// last entry, and merges what is new, oldest first. A log no longer served
// drops out of the next cursor.
func logsAfter(logs map[string][]LogEntry, c cursor, p Protocol) ([]LogEntry, string) {
	next := cursor{Version: cursorVersionLogs, Protocol: p, Logs: map[string]lastEntry{}}
	var out []LogEntry
	for key, all := range logs {
		a, ok := c.Logs[key]
		if !ok {
			a = c.lastEntry
		}
		got := newSince(all, a)
		out = append(out, got...)
		if len(got) > 0 {
			a = lastEntryOf(got[len(got)-1])
		}
		if !a.zero() {
			next.Logs[key] = a
		}
	}
	slices.SortStableFunc(out, compareEntries)
	if len(next.Logs) == 0 {
		return out, ""
	}
	return append([]LogEntry(nil), out...), next.encode()
}
