package bmc

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// shapedBMC starts a Redfish responder with opts and dials it.
func shapedBMC(t *testing.T, opts bmcsim.Options) (*bmcsim.BMC, Client) {
	t.Helper()
	opts.Username, opts.Password = testUser, testPassword
	sim := bmcsim.New(opts)
	srv, err := bmcsim.NewServer(sim, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return sim, dial(t, Endpoint{Protocol: ProtocolRedfish, Host: srv.Host, Port: srv.Port, CABundle: srv.CACertPEM,
		Username: testUser, Password: testPassword})
}

// DMTF's mockup serves the system's log as Log1, without LogEntryType; its
// entries say EntryType SEL. It is read, and an entry added later comes.
func TestRedfishLogWithoutLogEntryType(t *testing.T) {
	sim, c := shapedBMC(t, bmcsim.Options{LogServices: []bmcsim.LogService{
		{Owner: bmcsim.LogOfSystem, ID: "Log1", Name: "Log Service 1", EntryType: "SEL"},
	}})
	ctx := context.Background()
	sim.AddLogEntry("OK", "System boot")
	got, cur, err := c.LogEntries(ctx, "")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "Log1", got[0].Log)
	sim.AddLogEntry("Warning", "Fan 3 below threshold")
	got, _, err = c.LogEntries(ctx, cur)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "Fan 3 below threshold", got[0].Message)
}

// Several logs: the system's and the manager's hardware logs are read, each
// from its own position; the lifecycle log is not.
func TestRedfishSeveralLogServices(t *testing.T) {
	sim, c := shapedBMC(t, bmcsim.Options{LogServices: []bmcsim.LogService{
		{Owner: bmcsim.LogOfManager, ID: "Sel", Name: "IPMI SEL", LogEntryType: "SEL", EntryType: "SEL"},
		{Owner: bmcsim.LogOfManager, ID: "Lclog", Name: "Lifecycle Controller Log", LogEntryType: "Event", EntryType: "Event"},
		{Owner: bmcsim.LogOfSystem, ID: "EventLog", Name: "Event Log", EntryType: "Event"},
	}})
	ctx := context.Background()
	add := func(log, msg string) {
		_, err := sim.AddLogEntryTo(log, "Warning", msg)
		require.NoError(t, err)
	}
	add("Sel", "PSU 2 lost input")
	add("Lclog", "BIOS attribute changed by root")
	add("EventLog", "Correctable ECC error")
	got, cur, err := c.LogEntries(ctx, "")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"PSU 2 lost input", "Correctable ECC error"}, messagesOf(got))

	// Entry 2 of one log after entry 1 of the other: each log keeps its
	// own position, and IDs that repeat across logs are no trouble.
	add("EventLog", "Correctable ECC error again")
	add("Sel", "PSU 2 input restored")
	add("Lclog", "Job completed")
	got, cur, err = c.LogEntries(ctx, cur)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"Correctable ECC error again", "PSU 2 input restored"}, messagesOf(got))
	none, next, err := c.LogEntries(ctx, cur)
	require.NoError(t, err)
	assert.Empty(t, none)
	assert.Equal(t, cur, next)
}

// A BMC whose only log is not one of hardware events says so, naming what
// it found and why it was left out.
func TestRedfishNoHardwareLog(t *testing.T) {
	_, c := shapedBMC(t, bmcsim.Options{LogServices: []bmcsim.LogService{
		{Owner: bmcsim.LogOfManager, ID: "Lclog", Name: "Lifecycle Controller Log", EntryType: "Event"},
	}})
	_, _, err := c.LogEntries(context.Background(), "")
	require.Equal(t, failure.Unsupported, failure.ClassOf(err), "%v", err)
	assert.Contains(t, err.Error(), "Lclog")
	assert.Contains(t, err.Error(), "lifecycle")
}

func messagesOf(entries []LogEntry) []string {
	out := []string{}
	for _, e := range entries {
		out = append(out, e.Message)
	}
	return out
}

// An older BMC with SimpleStorage only: its drives' health is read too.
func TestRedfishSimpleStorageHealth(t *testing.T) {
	sim, c := shapedBMC(t, bmcsim.Options{SimpleStorageOnly: true})
	require.NoError(t, sim.SetHealth(bmcsim.PartDrive, "Disk 1", bmcsim.HealthWarning))
	h, err := c.Health(context.Background())
	require.NoError(t, err)
	assert.Equal(t, SubsystemHealth{Subsystem: SubsystemStorage, State: StateWarning, Message: "Disk 1: Warning"}, h.Get(SubsystemStorage))
	inv, err := c.Inventory(context.Background())
	require.NoError(t, err)
	assert.Len(t, inv.Drives, 2)
}

// A VLAN and the host interface's end are not ports of the server.
func TestRedfishNICsAreThePorts(t *testing.T) {
	hw := bmcsim.DefaultHardware()
	hw.NICs = append(hw.NICs,
		bmcsim.NIC{ID: "VLAN1", MAC: hw.NICs[0].MAC, SpeedMbps: 25000, Kind: bmcsim.NICVLAN, Parent: "NIC1"},
		bmcsim.NIC{ID: "ToManager", MAC: "aa:bb:cc:dd:ee:fe", SpeedMbps: 100, Kind: bmcsim.NICHostInterface})
	_, c := shapedBMC(t, bmcsim.Options{Hardware: &hw})
	inv, err := c.Inventory(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []NIC{{Name: "NIC1", MACAddress: "3c:ec:ef:00:00:01", SpeedMbps: 25000},
		{Name: "NIC2", MACAddress: "3c:ec:ef:00:00:02", SpeedMbps: 25000}}, inv.NICs)
}

// A drive that predicts its own failure while its health still reads OK
// (as SMART warnings usually come) makes Storage a Warning that says so,
// and one whose health is already Critical stays Critical.
func TestRedfishDriveFailurePredicted(t *testing.T) {
	sim, c := shapedBMC(t, bmcsim.Options{})
	require.NoError(t, sim.SetFailurePredicted("Disk 1", true))
	h, err := c.Health(context.Background())
	require.NoError(t, err)
	assert.Equal(t, SubsystemHealth{Subsystem: SubsystemStorage, State: StateWarning, Message: "Disk 1: Warning, failure predicted", Predicted: 1},
		h.Get(SubsystemStorage))

	require.NoError(t, sim.SetHealth(bmcsim.PartDrive, "Disk 1", bmcsim.HealthCritical))
	h, err = c.Health(context.Background())
	require.NoError(t, err)
	assert.Equal(t, SubsystemHealth{Subsystem: SubsystemStorage, State: StateCritical, Message: "Disk 1: Critical, failure predicted", Predicted: 1},
		h.Get(SubsystemStorage))

	require.NoError(t, sim.SetFailurePredicted("Disk 1", false))
	require.NoError(t, sim.SetHealth(bmcsim.PartDrive, "Disk 1", bmcsim.HealthOK))
	h, err = c.Health(context.Background())
	require.NoError(t, err)
	assert.Equal(t, SubsystemHealth{Subsystem: SubsystemStorage, State: StateOK, Message: "2 of 2 OK"}, h.Get(SubsystemStorage))
}
