package bmcsim

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// LogOwner says which resource a log service hangs under.
type LogOwner string

// Log owners.
const (
	LogOfManager LogOwner = "Manager" // Managers/1/LogServices
	LogOfSystem  LogOwner = "System"  // Systems/1/LogServices
)

// LogService describes one log service the BMC serves. BMCs name and type
// their logs in many ways (a SEL typed SEL, DMTF's mockup's Log1 with no
// LogEntryType, iDRAC's Sel and Lclog, iLO's IEL and IML), and clients must
// cope with each.
type LogService struct {
	Owner LogOwner
	// ID is the service's Id and the last segment of its URI.
	ID   string
	Name string
	// LogEntryType is the service's LogEntryType (SEL, Event, Multiple,
	// OEM); empty leaves the property out.
	LogEntryType string
	// EntryType is the EntryType of every entry (SEL, Event, Oem); empty
	// leaves the property out.
	EntryType string
}

// DefaultLogServices is one SEL under the manager, typed SEL, as many BMCs
// serve it.
func DefaultLogServices() []LogService {
	return []LogService{{Owner: LogOfManager, ID: "SEL", Name: "System Event Log", LogEntryType: "SEL", EntryType: "SEL"}}
}

// eventLog is the state of one log service.
type eventLog struct {
	spec    LogService
	entries []logEntry
	nextID  int
}

type logEntry struct {
	ID       int
	Created  time.Time
	Severity string
	Message  string
}

func (l *eventLog) path() string {
	if l.spec.Owner == LogOfSystem {
		return systemPath + "/LogServices/" + l.spec.ID
	}
	return managerPath + "/LogServices/" + l.spec.ID
}

// AddLogEntry appends an entry (Severity OK, Warning or Critical) to the
// first log service and returns its Id. A full log drops its oldest entry.
func (b *BMC) AddLogEntry(severity, message string) string {
	id, _ := b.AddLogEntryTo(b.opts.LogServices[0].ID, severity, message)
	return id
}

// AddLogEntryTo appends an entry to the log service with Id service.
func (b *BMC) AddLogEntryTo(service, severity, message string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.logNamed(service)
	if l == nil {
		return "", fmt.Errorf("no log service %q", service)
	}
	e := logEntry{ID: l.nextID, Created: b.opts.Now().UTC(), Severity: severity, Message: message}
	l.nextID++
	l.entries = append(l.entries, e)
	if over := len(l.entries) - b.opts.MaxLogEntries; over > 0 {
		l.entries = append([]logEntry(nil), l.entries[over:]...)
	}
	return strconv.Itoa(e.ID), nil
}

// ClearLog empties the first log service as its ClearLog action does. Ids
// start again at 1, as many BMCs do, which is what makes a clear hard to
// detect.
func (b *BMC) ClearLog() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.logs[0].clear()
}

func (l *eventLog) clear() {
	l.entries = nil
	l.nextID = 1
}

func (b *BMC) logNamed(id string) *eventLog {
	for _, l := range b.logs {
		if l.spec.ID == id {
			return l
		}
	}
	return nil
}

// logServiceIDs lists the log services under owner, for its collection.
func (b *BMC) logServiceIDs(owner LogOwner) []string {
	var out []string
	for _, l := range b.logs {
		if l.spec.Owner == owner {
			out = append(out, l.path())
		}
	}
	return out
}

// logResource renders a log service, its entries or one entry at path.
func (b *BMC) logResource(path string, r *http.Request) (map[string]any, bool) {
	for _, l := range b.logs {
		switch {
		case path == l.path():
			return b.logService(l), true
		case path == l.path()+"/Entries":
			return b.logEntries(l, r), true
		case strings.HasPrefix(path, l.path()+"/Entries/"):
			id := strings.TrimPrefix(path, l.path()+"/Entries/")
			for _, e := range l.entries {
				if strconv.Itoa(e.ID) == id {
					return l.entry(e), true
				}
			}
		}
	}
	return nil, false
}

// logAction runs a log service's ClearLog; ok is false for any other path.
func (b *BMC) logAction(path string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range b.logs {
		if path == l.path()+"/Actions/LogService.ClearLog" {
			l.clear()
			return true
		}
	}
	return false
}

func (b *BMC) logService(l *eventLog) map[string]any {
	s := resource(l.path(), "#LogService.v1_5_0.LogService", "LogService.LogService")
	s["Id"], s["Name"], s["ServiceEnabled"] = l.spec.ID, l.spec.Name, true
	if l.spec.LogEntryType != "" {
		s["LogEntryType"] = l.spec.LogEntryType
	}
	s["MaxNumberOfRecords"], s["OverWritePolicy"] = b.opts.MaxLogEntries, "WrapsWhenFull"
	s["DateTime"] = b.opts.Now().UTC().Format(time.RFC3339)
	s["Entries"] = link(l.path() + "/Entries")
	s["Actions"] = map[string]any{"#LogService.ClearLog": map[string]any{"target": l.path() + "/Actions/LogService.ClearLog"}}
	s["Status"] = status(HealthOK, false)
	return s
}

// logEntries renders one page of a log, oldest first, with the members
// expanded as most BMCs do, and a nextLink to the following page.
func (b *BMC) logEntries(l *eventLog, r *http.Request) map[string]any {
	skip, _ := strconv.Atoi(r.URL.Query().Get("$skip"))
	skip = max(0, min(skip, len(l.entries)))
	end := min(skip+b.opts.LogPageSize, len(l.entries))
	c := resource(l.path()+"/Entries", "#LogEntryCollection.LogEntryCollection", "LogEntryCollection.LogEntryCollection")
	members := []any{}
	for _, e := range l.entries[skip:end] {
		members = append(members, l.entry(e))
	}
	c["Name"], c["Members"], c["Members@odata.count"] = l.spec.Name+" Entries", members, len(l.entries)
	if end < len(l.entries) {
		c["Members@odata.nextLink"] = l.path() + "/Entries?$skip=" + strconv.Itoa(end)
	}
	return c
}

func (l *eventLog) entry(e logEntry) map[string]any {
	id := strconv.Itoa(e.ID)
	r := resource(l.path()+"/Entries/"+id, "#LogEntry.v1_15_0.LogEntry", "LogEntry.LogEntry")
	r["Id"], r["Name"] = id, "Log Entry "+id
	if l.spec.EntryType != "" {
		r["EntryType"] = l.spec.EntryType
	}
	r["Created"], r["Severity"], r["Message"] = e.Created.Format(time.RFC3339), e.Severity, e.Message
	return r
}
