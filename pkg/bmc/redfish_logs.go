package bmc

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"
)

// LogEntries reads the system event log: the system's SEL log service if
// it has one, else the manager's. gofish fetches members in parallel, so
// entries are put back in order by time, then by numeric Id.
func (c *redfishClient) LogEntries(ctx context.Context, cur string) ([]LogEntry, string, error) {
	pos, err := decodeCursor(cur, ProtocolRedfish)
	if err != nil {
		return nil, "", newError("LogEntries", c.ep, Invalid, err.Error(), nil)
	}
	var all []LogEntry
	err = c.do(ctx, "LogEntries", func(api *gofish.APIClient) error {
		sys, err := c.system(api)
		if err != nil {
			return err
		}
		svc, err := c.selService(sys)
		if err != nil || svc == nil {
			return err
		}
		raw, err := svc.Entries()
		if err != nil {
			return err
		}
		all = make([]LogEntry, 0, len(raw))
		for _, e := range raw {
			all = append(all, toLogEntry(e))
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	if all == nil {
		return nil, "", newError("LogEntries", c.ep, Unsupported, "the BMC has no SEL log service under the system or its managers", nil)
	}
	slices.SortStableFunc(all, compareEntries)
	out, next := entriesAfter(all, pos, ProtocolRedfish, "")
	return out, next, nil
}

// selService finds the log service holding the SEL: one whose LogEntryType
// is SEL or whose Id is SEL, under the system first, then under the
// managers of the system.
func (c *redfishClient) selService(sys *schemas.ComputerSystem) (*schemas.LogService, error) {
	services, err := optional(sys.LogServices())
	if err != nil {
		return nil, err
	}
	if s := pickSEL(services); s != nil {
		return s, nil
	}
	managers, err := optional(sys.ManagedBy())
	if err != nil {
		return nil, err
	}
	for _, m := range managers {
		services, err := optional(m.LogServices())
		if err != nil {
			return nil, err
		}
		if s := pickSEL(services); s != nil {
			return s, nil
		}
	}
	return nil, nil
}

func pickSEL(services []*schemas.LogService) *schemas.LogService {
	slices.SortFunc(services, func(a, b *schemas.LogService) int { return strings.Compare(a.ODataID, b.ODataID) })
	for _, s := range services {
		if s.LogEntryType == schemas.SELLogEntryTypes || strings.EqualFold(s.ID, "SEL") {
			return s
		}
	}
	return nil
}

func toLogEntry(e *schemas.LogEntry) LogEntry {
	out := LogEntry{ID: e.ID, Message: strings.TrimSpace(e.Message), Severity: healthState(string(e.Severity))}
	if t, err := time.Parse(time.RFC3339, e.Created); err == nil {
		out.Time = t.UTC()
	}
	if out.Message == "" {
		out.Message = e.Name
	}
	return out
}

// compareEntries orders by time, then by Id as a number when both are
// numbers (SEL record numbers), else as text.
func compareEntries(a, b LogEntry) int {
	if c := a.Time.Compare(b.Time); c != 0 {
		return c
	}
	an, aerr := strconv.Atoi(a.ID)
	bn, berr := strconv.Atoi(b.ID)
	if aerr == nil && berr == nil {
		return an - bn
	}
	return strings.Compare(a.ID, b.ID)
}
