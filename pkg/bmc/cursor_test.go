package bmc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func entry(id string, sec int64, msg string) LogEntry {
	var t time.Time
	if sec > 0 {
		t = time.Unix(sec, 0).UTC()
	}
	return LogEntry{ID: id, Time: t, Severity: StateWarning, Message: msg}
}

// poll runs entriesAfter through the string form of the cursor, as a
// caller that stores it would.
func poll(t *testing.T, log []LogEntry, cur, epoch string) ([]string, string) {
	t.Helper()
	c, err := decodeCursor(cur, ProtocolRedfish)
	require.NoError(t, err)
	out, next := entriesAfter(log, c, ProtocolRedfish, epoch)
	return ids(out), next
}

func TestEntriesAfter(t *testing.T) {
	a, b, c := entry("1", 100, "a"), entry("2", 100, "b"), entry("3", 101, "c")
	tests := []struct {
		name      string
		first     []LogEntry // the log at the first poll (from "")
		epoch1    string
		then      []LogEntry // the log at the second poll
		epoch2    string
		wantFirst []string
		want      []string
	}{
		{name: "appended", first: []LogEntry{a, b}, then: []LogEntry{a, b, c}, wantFirst: []string{"1", "2"}, want: []string{"3"}},
		{name: "unchanged", first: []LogEntry{a, b}, then: []LogEntry{a, b}, wantFirst: []string{"1", "2"}, want: []string{}},
		{name: "empty log, then one entry", first: nil, then: []LogEntry{a}, wantFirst: []string{}, want: []string{"1"}},
		{
			name: "cleared, IDs reused with other content", first: []LogEntry{a, b}, then: []LogEntry{entry("1", 105, "new")},
			wantFirst: []string{"1", "2"}, want: []string{"1"},
		},
		{
			name: "wrapped: the last entry and older entries are gone", first: []LogEntry{a, b},
			then: []LogEntry{c, entry("4", 102, "d")}, wantFirst: []string{"1", "2"}, want: []string{"3", "4"},
		},
		{
			name: "last entry gone: same-second entries after it are new, older are not", first: []LogEntry{a, b},
			then: []LogEntry{entry("9", 99, "old"), entry("10", 100, "same second"), c}, wantFirst: []string{"1", "2"}, want: []string{"10", "3"},
		},
		{
			name: "epoch changed: everything is new", first: []LogEntry{a, b}, epoch1: "10",
			then: []LogEntry{a, b}, epoch2: "20", wantFirst: []string{"1", "2"}, want: []string{"1", "2"},
		},
		{
			name: "no times, last entry gone: everything is new", first: []LogEntry{entry("1", 0, "a")},
			then: []LogEntry{entry("1", 0, "x")}, wantFirst: []string{"1"}, want: []string{"1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cur := poll(t, tt.first, "", tt.epoch1)
			assert.Equal(t, tt.wantFirst, got)
			got, next := poll(t, tt.then, cur, tt.epoch2)
			assert.Equal(t, tt.want, got)
			again, _ := poll(t, tt.then, next, tt.epoch2)
			assert.Empty(t, again, "the next poll of the same log returns nothing")
		})
	}
}

func TestDecodeCursor(t *testing.T) {
	_, err := decodeCursor("%%%", ProtocolIPMI)
	assert.Error(t, err)
	_, cur := poll(t, []LogEntry{entry("1", 100, "a")}, "", "")
	_, err = decodeCursor(cur, ProtocolIPMI)
	assert.ErrorContains(t, err, "written for redfish")
	c, err := decodeCursor("", ProtocolIPMI)
	require.NoError(t, err)
	assert.Equal(t, cursor{}, c)
}

// Several logs move on each from its own last entry; a cursor of one entry
// (written when only the SEL was read) stands for every log at first.
func TestLogsAfter(t *testing.T) {
	in := func(log string, e LogEntry) LogEntry {
		e.Log = log
		return e
	}
	a, b := in("SEL", entry("1", 100, "a")), in("SEL", entry("2", 101, "b"))
	x, y := in("Log1", entry("1", 100, "x")), in("Log1", entry("2", 102, "y"))
	pollLogs := func(logs map[string][]LogEntry, cur string) ([]string, string) {
		t.Helper()
		c, err := decodeCursor(cur, ProtocolRedfish)
		require.NoError(t, err)
		out, next := logsAfter(logs, c, ProtocolRedfish)
		msgs := []string{}
		for _, e := range out {
			msgs = append(msgs, e.Message)
		}
		return msgs, next
	}
	got, cur := pollLogs(map[string][]LogEntry{"sel": {a}, "log1": {x}}, "")
	assert.Equal(t, []string{"x", "a"}, got, "oldest first across logs, then by log")
	got, cur = pollLogs(map[string][]LogEntry{"sel": {a, b}, "log1": {x, y}}, cur)
	assert.Equal(t, []string{"b", "y"}, got, "an entry 1 in each log is not taken for the other's")
	got, next := pollLogs(map[string][]LogEntry{"sel": {a, b}, "log1": {x, y}}, cur)
	assert.Empty(t, got)
	assert.Equal(t, cur, next)

	_, legacy := poll(t, []LogEntry{a}, "", "")
	got, _ = pollLogs(map[string][]LogEntry{"sel": {a, b}, "log1": {x, y}}, legacy)
	assert.Equal(t, []string{"x", "b", "y"}, got, "the one last entry: after it in its log, from its second in the others")
	got, next = pollLogs(map[string][]LogEntry{}, "")
	assert.Empty(t, got)
	assert.Empty(t, next)
}
