package bmc

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

// logSource is a log service found to hold hardware events.
type logSource struct {
	// uri is the service's @odata.id, which keys its position in the cursor.
	uri, id, owner string
	entries        string
	// onlyEvents keeps only entries whose EntryType is SEL or Event: the
	// service does not say what it holds, or holds several kinds.
	onlyEvents bool
}

// LogEntries reads every log service of the system and of its managers
// that holds hardware events (see judgeLog), each from its own position in
// the cursor, and returns what is new in all of them, oldest first. The
// services are looked up once per session. A BMC with none is Unsupported,
// with a message naming what it has and why each was left out.
func (c *redfishClient) LogEntries(ctx context.Context, cur string) ([]LogEntry, string, error) {
	pos, err := decodeCursor(cur, ProtocolRedfish)
	if err != nil {
		return nil, "", newError("LogEntries", c.ep, failure.Invalid, err.Error(), nil)
	}
	logs := map[string][]LogEntry{}
	var skipped []string
	err = c.do(ctx, "LogEntries", func(api *gofish.APIClient) error {
		if c.logSources == nil {
			sys, err := c.system(api)
			if err != nil {
				return err
			}
			if c.logSources, c.skippedLogs, err = findLogs(sys); err != nil {
				c.logSources = nil
				return err
			}
		}
		skipped = c.skippedLogs
		clear(logs)
		for _, src := range c.logSources {
			raw, err := optional(schemas.GetCollectionObjects[schemas.LogEntry](api, src.entries))
			if err != nil {
				return err
			}
			entries := make([]LogEntry, 0, len(raw))
			for _, e := range raw {
				if !src.onlyEvents || isEventEntry(e.EntryType) {
					entries = append(entries, toLogEntry(e, src.id))
				}
			}
			if src.onlyEvents && len(entries) == 0 {
				// Nothing shows it holds hardware events, yet.
				skipped = append(skipped, src.id+" of "+src.owner+" (no SEL or Event entries)")
				continue
			}
			slices.SortStableFunc(entries, compareEntries)
			logs[src.uri] = entries
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	if len(logs) == 0 {
		msg := "the BMC has no log service of hardware events under the system or its managers"
		if len(skipped) > 0 {
			msg += "; left out: " + strings.Join(skipped, ", ")
		}
		return nil, "", newError("LogEntries", c.ep, failure.Unsupported, msg, nil)
	}
	out, next := logsAfter(logs, pos, ProtocolRedfish)
	return out, next, nil
}

// findLogs judges the log services of the system, then of its managers.
func findLogs(sys *schemas.ComputerSystem) (found []logSource, skipped []string, err error) {
	services, err := optional(sys.LogServices())
	if err != nil {
		return nil, nil, err
	}
	owner := "system " + sys.ID
	take := func(owner string, services []*schemas.LogService) {
		slices.SortFunc(services, func(a, b *schemas.LogService) int { return strings.Compare(a.ODataID, b.ODataID) })
		for _, s := range services {
			read, onlyEvents, why := judgeLog(s)
			if !read {
				skipped = append(skipped, fmt.Sprintf("%s of %s (%s)", s.ID, owner, why))
				continue
			}
			found = append(found, logSource{uri: s.ODataID, id: s.ID, owner: owner, entries: entriesLink(s), onlyEvents: onlyEvents})
		}
	}
	take(owner, services)
	managers, err := optional(sys.ManagedBy())
	if err != nil {
		return nil, nil, err
	}
	for _, m := range managers {
		services, err := optional(m.LogServices())
		if err != nil {
			return nil, nil, err
		}
		take("manager "+m.ID, services)
	}
	if found == nil {
		found = []logSource{}
	}
	return found, skipped, nil
}

// Log services named for what they are, case aside. BMCs name their logs
// in many ways: a SEL ("SEL", iDRAC's "Sel"), DMTF's mockup's "Log1", an
// "EventLog", iLO's "IEL" and "IML" hold hardware events. iDRAC's "Lclog"
// is its lifecycle log (firmware updates, configuration jobs, logins),
// "FaultList" repeats the faults of the other logs, and audit, security and
// journal logs are the BMC's own: read, they would turn every login of the
// addon itself into an Event.
var (
	hardwareLogs = []string{"sel", "log1", "eventlog", "iel", "iml"}
	otherLogs    = map[string]string{
		"lclog":     "lifecycle and configuration changes, not hardware events",
		"faultlist": "a summary of the faults the other logs hold",
		"auditlog":  "the BMC's audit log",
		"audit":     "the BMC's audit log",
		"security":  "the BMC's security log",
		"journal":   "the BMC's own software log",
	}
)

// judgeLog decides whether a log service holds hardware events: by its
// name where that says what it is, else by its LogEntryType (SEL and
// Event do, Multiple may, OEM and CXL entries are not ones the addon can
// read), else by its entries (SEL or Event). onlyEvents asks to keep only
// entries of those types.
func judgeLog(s *schemas.LogService) (read, onlyEvents bool, why string) {
	id := strings.ToLower(s.ID)
	if why, ok := otherLogs[id]; ok {
		return false, false, why
	}
	if entriesLink(s) == "" {
		return false, false, "it has no entries"
	}
	named := slices.Contains(hardwareLogs, id)
	switch s.LogEntryType {
	case schemas.SELLogEntryTypes, schemas.EventLogEntryTypes:
		return true, false, ""
	case schemas.MultipleLogEntryTypes:
		return true, true, ""
	case "":
		return true, !named, ""
	}
	if named {
		return true, true, ""
	}
	return false, false, fmt.Sprintf("its entries are of type %s", s.LogEntryType)
}

func isEventEntry(t schemas.LogEntryType) bool {
	return t == schemas.SELLogEntryType || t == schemas.EventLogEntryType
}

// entriesLink is the service's Entries collection, which gofish keeps to
// itself; it is read from the service's own JSON.
func entriesLink(s *schemas.LogService) string {
	var raw struct {
		Entries struct {
			ID string `json:"@odata.id"`
		}
	}
	if json.Unmarshal(s.RawData, &raw) != nil {
		return ""
	}
	return raw.Entries.ID
}

func toLogEntry(e *schemas.LogEntry, log string) LogEntry {
	out := LogEntry{ID: e.ID, Log: log, Message: strings.TrimSpace(e.Message), Severity: healthState(string(e.Severity))}
	if t, err := time.Parse(time.RFC3339, e.Created); err == nil {
		out.Time = t.UTC()
	}
	if out.Message == "" {
		out.Message = e.Name
	}
	return out
}

// compareEntries orders by time, then by log, then by Id as a number when
// both are numbers (SEL record numbers), else as text.
func compareEntries(a, b LogEntry) int {
	if c := a.Time.Compare(b.Time); c != 0 {
		return c
	}
	if c := strings.Compare(a.Log, b.Log); c != 0 {
		return c
	}
	an, aerr := strconv.Atoi(a.ID)
	bn, berr := strconv.Atoi(b.ID)
	if aerr == nil && berr == nil {
		return an - bn
	}
	return strings.Compare(a.ID, b.ID)
}
