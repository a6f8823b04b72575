package bmcdriver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/machine"
)

func reading(states map[bmc.Subsystem]bmc.State) bmc.Health {
	h := bmc.Health{Overall: bmc.StateOK}
	for _, s := range bmc.Subsystems {
		st, ok := states[s]
		if !ok {
			st = bmc.StateOK
		}
		msg := ""
		if st != bmc.StateOK {
			msg = string(s) + " part: " + string(st)
		}
		h.Subsystems = append(h.Subsystems, bmc.SubsystemHealth{Subsystem: s, State: st, Message: msg})
	}
	return h
}

// Health changes that matter are events, numbered on; OK and Unknown
// (a part without a reading) are not news, at first sight or between them.
func TestHealthEvents(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	cur := cursor{Version: cursorVersion, Protocol: bmc.ProtocolRedfish}
	assert.Empty(t, healthEvents(&cur, reading(map[bmc.Subsystem]bmc.State{bmc.SubsystemFans: bmc.StateUnknown}), "k", now))

	evs := healthEvents(&cur, reading(map[bmc.Subsystem]bmc.State{bmc.SubsystemFans: bmc.StateUnknown, bmc.SubsystemThermal: bmc.StateWarning}), "k", now)
	require.Len(t, evs, 1)
	assert.Equal(t, "health/k/1", evs[0].ID)
	assert.Equal(t, machine.SeverityWarning, evs[0].Severity)
	assert.Equal(t, "Thermal is Warning (Thermal part: Warning), was OK", evs[0].Message)

	evs = healthEvents(&cur, reading(map[bmc.Subsystem]bmc.State{bmc.SubsystemFans: bmc.StateOK}), "k", now)
	require.Len(t, evs, 1, "the recovery is news; Unknown to OK is not")
	assert.Equal(t, "health/k/2", evs[0].ID)
	assert.Equal(t, machine.SeverityNormal, evs[0].Severity)
	assert.Equal(t, "Thermal is OK, was Warning", evs[0].Message)
	assert.Empty(t, healthEvents(&cur, reading(nil), "k", now), "an unchanged reading says nothing")

	// The cursor carries the health across a restart.
	saved, err := decodeCursor(evs[0].Cursor, bmc.ProtocolRedfish)
	require.NoError(t, err)
	assert.Empty(t, healthEvents(&saved, reading(nil), "k", now))
}

// A cursor of the other protocol keeps its health and number but not its
// log position; a cursor the driver did not write is refused.
func TestCursorAcrossProtocols(t *testing.T) {
	c := cursor{Version: cursorVersion, Protocol: bmc.ProtocolIPMI, Log: "sel-position", Health: map[string]string{"Fans": "OK\x00"}, Changes: 3}
	got, err := decodeCursor(c.encode(), bmc.ProtocolRedfish)
	require.NoError(t, err)
	assert.Empty(t, got.Log)
	assert.Equal(t, 3, got.Changes)
	assert.Equal(t, c.Health, got.Health)
	_, err = decodeCursor("not-a-cursor", bmc.ProtocolRedfish)
	assert.Error(t, err)
}

// Only the last entry of a batch carries the log's next position; IDs join
// the record ID with the content, so a record number reused after a clear
// is another event.
func TestLogEvents(t *testing.T) {
	cur := cursor{Version: cursorVersion, Protocol: bmc.ProtocolIPMI, Log: "from"}
	at := time.Unix(1_800_000_000, 0)
	evs := logEvents(cur, []bmc.LogEntry{
		{ID: "1", Time: at, Severity: bmc.StateOK, Message: "boot"},
		{ID: "2", Time: at, Severity: bmc.StateCritical, Message: "PSU failed"},
	}, "to")
	require.Len(t, evs, 2)
	first, _ := decodeCursor(evs[0].Cursor, bmc.ProtocolIPMI)
	last, _ := decodeCursor(evs[1].Cursor, bmc.ProtocolIPMI)
	assert.Equal(t, "from", first.Log)
	assert.Equal(t, "to", last.Log)
	assert.Equal(t, machine.SeverityWarning, evs[1].Severity)
	reused := logEvents(cur, []bmc.LogEntry{{ID: "1", Time: at.Add(time.Hour), Severity: bmc.StateOK, Message: "boot"}}, "x")
	assert.NotEqual(t, evs[0].ID, reused[0].ID)
	twoLogs := logEvents(cur, []bmc.LogEntry{{ID: "1", Log: "SEL", Time: at, Message: "boot"}, {ID: "1", Log: "Log1", Time: at, Message: "boot"}}, "y")
	assert.NotEqual(t, twoLogs[0].ID, twoLogs[1].ID, "record 1 of two logs is two events")
}

// The inventory becomes the chain's facts, grouped as people read them.
func TestToFacts(t *testing.T) {
	f := toFacts(bmc.Inventory{
		Manufacturer: "Dell Inc.", Model: "PowerEdge R650", SerialNumber: "7XJ2KQ3", BIOSVersion: "1.2.3",
		SystemUUID: "4c4c4544-0051-3010-8052-b4c04f4d4e32", CPUCount: 2, CPUModel: "Xeon", MemoryBytes: 256 << 30,
		Drives: []bmc.Drive{{SizeBytes: 960197124096, MediaType: "SSD", Protocol: "SATA"}, {SizeBytes: 960197124096, MediaType: "SSD", Protocol: "SATA"}, {Name: "empty"}},
		NICs:   []bmc.NIC{{SpeedMbps: 25000}, {SpeedMbps: 1000}, {SpeedMbps: 25000}, {}},
	}, bmc.Endpoint{Protocol: bmc.ProtocolIPMI, Host: "10.0.0.5"})
	assert.Equal(t, "2 x Xeon", f.CPUSummary())
	assert.Equal(t, "256GB", f.Memory)
	assert.Equal(t, "2 x 960GB SATA SSD", f.DriveSummary())
	assert.Equal(t, "2 x 25Gbps, 1 x 1Gbps, 1 x NIC", f.NICSummary())
	assert.Equal(t, "IPMI BMC at 10.0.0.5:623", f.Source)
	assert.Equal(t, "4c4c4544-0051-3010-8052-b4c04f4d4e32", f.SystemUUID, "what the boot endpoint knows the server by")
}
