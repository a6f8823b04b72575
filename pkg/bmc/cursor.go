package bmc

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// cursor is what the opaque cursor string carries: the last entry handed
// out (its ID, time and a digest of its content) and the log's epoch, a
// value that changes when the BMC clears the log (IPMI's last erase time;
// Redfish has none).
type cursor struct {
	Version  int      `json:"v"`
	Protocol Protocol `json:"p"`
	Epoch    string   `json:"e,omitempty"`
	ID       string   `json:"i"`
	// Unix is the last entry's time in seconds, 0 when it had none.
	Unix   int64  `json:"t,omitempty"`
	Digest string `json:"d"`
}

const cursorVersion = 1

func (c cursor) encode() string {
	b, _ := json.Marshal(c) // a struct of strings and ints always marshals
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
	if err != nil || c.Version != cursorVersion {
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

// entriesAfter picks, from the whole log (oldest first), the entries after
// the cursor, and returns the next cursor. The rules:
//
//  1. No cursor: everything.
//  2. The epoch changed: the log was cleared since the last poll, so every
//     entry in it is new. Entries written and cleared between two polls are
//     lost; nothing can bring them back.
//  3. The anchor (same ID and digest) is in the log: what follows it.
//  4. The anchor is gone (cleared on a BMC without an epoch, or pushed out
//     of a log that wraps): entries at or after the anchor's time are new,
//     since a wrap drops the oldest first and a clear drops everything. Only
//     entries the BMC deleted one by one could be handed out twice this way.
//     Without times (an IPMI clock never set) everything is new.
//
// The next cursor points at the newest entry returned, or stays where it
// was (with the new epoch) when nothing is new, so polling an unchanged log
// returns nothing and a restarted caller holding the cursor resumes exactly.
func entriesAfter(all []LogEntry, c cursor, p Protocol, epoch string) ([]LogEntry, string) {
	var out []LogEntry
	switch {
	case c.ID == "" && c.Digest == "":
		out = all
	case c.Epoch != epoch:
		out = all
	default:
		anchor := -1
		for i, e := range all {
			if e.ID == c.ID && digest(e) == c.Digest {
				anchor = i
			}
		}
		switch {
		case anchor >= 0:
			out = all[anchor+1:]
		case c.Unix == 0:
			out = all
		default:
			for _, e := range all {
				if e.Time.IsZero() || e.Time.Unix() >= c.Unix {
					out = append(out, e)
				}
			}
		}
	}
	next := cursor{Version: cursorVersion, Protocol: p, Epoch: epoch, ID: c.ID, Unix: c.Unix, Digest: c.Digest}
	if len(out) > 0 {
		last := out[len(out)-1]
		next.ID, next.Unix, next.Digest = last.ID, unixOrZero(last.Time), digest(last)
	}
	if next.ID == "" && next.Digest == "" && next.Epoch == "" {
		return out, ""
	}
	return append([]LogEntry(nil), out...), next.encode()
}
