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

// anchor is the last entry handed out of one log: its ID, its time in
// seconds (0 when it had none) and a digest of its content.
type anchor struct {
	ID     string `json:"i"`
	Unix   int64  `json:"t,omitempty"`
	Digest string `json:"d"`
}

func (a anchor) zero() bool { return a.ID == "" && a.Digest == "" }

func anchorOf(e LogEntry) anchor {
	return anchor{ID: e.ID, Unix: unixOrZero(e.Time), Digest: digest(e)}
}

// cursor is what the opaque cursor string carries: for a BMC with one log
// (the IPMI SEL), its anchor and the log's epoch, a value that changes when
// the BMC clears the log (IPMI's last erase time); for a Redfish BMC, one
// anchor per log it reads, by the log's URI, since a BMC may keep several
// logs of hardware events and each moves on its own.
type cursor struct {
	Version  int      `json:"v"`
	Protocol Protocol `json:"p"`
	Epoch    string   `json:"e,omitempty"`
	anchor
	Logs map[string]anchor `json:"l,omitempty"`
}

// Cursor versions: 1 holds one anchor; 2 adds an anchor per log. A version
// 1 Redfish cursor (written when only the SEL was read) still reads: its
// anchor stands for every log until each has one of its own.
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
// anchor:
//
//  1. No anchor: everything.
//  2. The anchor (same ID and digest) is in the log: what follows it.
//  3. The anchor is gone (cleared on a BMC without an epoch, or pushed out
//     of a log that wraps): entries at or after the anchor's time are new,
//     since a wrap drops the oldest first and a clear drops everything. Only
//     entries the BMC deleted one by one could be handed out twice this way.
//     Without times (an IPMI clock never set) everything is new.
func newSince(all []LogEntry, a anchor) []LogEntry {
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
		out = newSince(all, c.anchor)
	}
	next := cursor{Version: cursorVersion, Protocol: p, Epoch: epoch, anchor: c.anchor}
	if len(out) > 0 {
		next.anchor = anchorOf(out[len(out)-1])
	}
	if next.zero() && next.Epoch == "" {
		return out, ""
	}
	return append([]LogEntry(nil), out...), next.encode()
}

// logsAfter does the same for a BMC with several logs, each from its own
// anchor, and merges what is new, oldest first. A log no longer served
// drops out of the next cursor.
func logsAfter(logs map[string][]LogEntry, c cursor, p Protocol) ([]LogEntry, string) {
	next := cursor{Version: cursorVersionLogs, Protocol: p, Logs: map[string]anchor{}}
	var out []LogEntry
	for key, all := range logs {
		a, ok := c.Logs[key]
		if !ok {
			a = c.anchor
		}
		got := newSince(all, a)
		out = append(out, got...)
		if len(got) > 0 {
			a = anchorOf(got[len(got)-1])
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
