package bmc

import (
	"context"
	"fmt"
	"strconv"
	"time"

	ipmi "github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
)

// preInitLimit: IPMI timestamps up to 0x20000000 count seconds since the
// BMC started, not since 1970 (the BMC's clock was not set yet).
const preInitLimit = 0x20000000

// LogEntries reads the whole SEL in record order, which is the order the
// BMC added them. The SEL's last erase time is the cursor's epoch, so a
// clear is seen even when record IDs start again.
func (c *ipmiClient) LogEntries(ctx context.Context, cur string) ([]LogEntry, string, error) {
	pos, err := decodeCursor(cur, ProtocolIPMI)
	if err != nil {
		return nil, "", newError("LogEntries", c.ep, failure.Invalid, err.Error(), nil)
	}
	var (
		all   []LogEntry
		epoch string
	)
	err = c.do(ctx, "LogEntries", func(cl *ipmi.Client) error {
		info, err := cl.GetSELInfo(ctx)
		if err != nil {
			return err
		}
		epoch = strconv.FormatInt(info.RecentEraseTime.Unix(), 10)
		all = nil
		if info.Entries == 0 {
			// Reading an empty SEL answers "record not found".
			return nil
		}
		records, err := selRecords(ctx, cl)
		if err != nil {
			return err
		}
		for _, r := range records {
			all = append(all, selEntry(r))
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	out, next := entriesAfter(all, pos, ProtocolIPMI, epoch)
	return out, next, nil
}

func selEntry(r *types.SEL) LogEntry {
	e := LogEntry{ID: strconv.Itoa(int(r.RecordID)), Severity: StateUnknown}
	switch {
	case r.Standard != nil:
		s := r.Standard
		e.Time = realTime(s.Timestamp)
		dir := "Asserted"
		if s.EventDir {
			dir = "Deasserted"
		}
		what := s.EventString()
		if what == "" {
			// The IPMI tables name no event for this sensor type and
			// offset (an OEM or reserved one): say what the record holds.
			what = fmt.Sprintf("unnamed event (reading type %#02x, offset %d)", uint8(s.EventReadingType), s.EventData.EventReadingOffset())
		}
		e.Message = fmt.Sprintf("%s #%#02x: %s (%s)", s.SensorType, uint8(s.SensorNumber), what, dir)
		e.Severity = selSeverity(s.EventSeverity())
	case r.OEMTimestamped != nil:
		e.Time = realTime(r.OEMTimestamped.Timestamp)
		e.Message = fmt.Sprintf("OEM record type %#02x from manufacturer %d", uint8(r.RecordType), r.OEMTimestamped.ManufacturerID)
	default:
		e.Message = fmt.Sprintf("OEM record type %#02x", uint8(r.RecordType))
	}
	return e
}

func realTime(t time.Time) time.Time {
	if t.Unix() <= preInitLimit {
		return time.Time{}
	}
	return t.UTC()
}

func selSeverity(s types.EventSeverity) State {
	switch s {
	case types.EventSeverityOK, types.EventSeverityInfo:
		return StateOK
	case types.EventSeverityWarning, types.EventSeverityDegraded:
		return StateWarning
	case types.EventSeverityCritical, types.EventSeverityNonFatal:
		return StateCritical
	}
	return StateUnknown
}
