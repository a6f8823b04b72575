package inventory

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	hardwarev1 "github.com/harvester/harvester-equinix-addon/pkg/apis/hardware/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// A BMC shaped as DMTF's public-rackmount1 mockup and older BMCs are: the
// system's log is Log1 without LogEntryType (its entries are SEL entries),
// the manager keeps a lifecycle log beside it, drives are described through
// SimpleStorage only, and a VLAN and the host interface's end are listed
// among the Ethernet interfaces. An entry added at run time becomes an
// Event, the lifecycle log's does not, a drive in Warning is the Storage
// health and an Event, and the NICs are the two ports.
func TestRedfishBMCShapedAsOthersAre(t *testing.T) {
	env := newEnv(t)
	hwr := bmcsim.DefaultHardware()
	hwr.NICs = append(hwr.NICs, bmcsim.NIC{ID: "VLAN1", MAC: hwr.NICs[0].MAC, SpeedMbps: 25000, Kind: bmcsim.NICVLAN, Parent: "NIC1"},
		bmcsim.NIC{ID: "ToManager", MAC: "aa:bb:cc:dd:ee:fe", SpeedMbps: 100, Kind: bmcsim.NICHostInterface})
	sim, srv := redfishBMCWith(t, bmcsim.Options{Hardware: &hwr, SimpleStorageOnly: true, LogServices: []bmcsim.LogService{
		{Owner: bmcsim.LogOfSystem, ID: "Log1", Name: "Log Service 1", EntryType: "SEL"},
		{Owner: bmcsim.LogOfManager, ID: "Lclog", Name: "Lifecycle Controller Log", EntryType: "Event"},
	}})
	env.CreateReadyNode("shaped")
	env.CreateBMCSecret("shaped", bmcUser, bmcPassword)
	env.CreateInventory(framework.RedfishInventory("shaped", srv))
	env.Eventually(func() bool {
		return hasCondition(env, "shaped", equinixv1.BMCEventLogAvailable, metav1.ConditionTrue, equinixv1.ReasonEventLogRead) &&
			node(t, env, "shaped").Annotations[equinixv1.AnnotationNICs] != ""
	}, time.Minute, "the event log was not read")
	assert.Equal(t, "2 x 25Gbps", node(t, env, "shaped").Annotations[equinixv1.AnnotationNICs], "a VLAN and the host interface are no ports")

	sim.AddLogEntry("Warning", "Fan 3 below lower threshold")
	_, err := sim.AddLogEntryTo("Lclog", "OK", "BIOS attribute changed")
	require.NoError(t, err)
	require.NoError(t, sim.SetHealth(bmcsim.PartDrive, "Disk 1", bmcsim.HealthWarning))
	env.Eventually(func() bool {
		msgs := messages(forwarded(t, env, "shaped"))
		return countHolding(msgs, "Fan 3 below lower threshold") == 1 && countHolding(msgs, "Storage is Warning (Disk 1: Warning)") == 1
	}, time.Minute, "the Log1 entry and the drive's health were not forwarded")
	env.WaitPolls("shaped", 2)
	assert.Zero(t, countHolding(messages(forwarded(t, env, "shaped")), "BIOS attribute changed"), "the lifecycle log is not hardware events")
	var storage hardwarev1.SubsystemHealth
	for _, s := range hw(env, "shaped").Subsystems {
		if s.Name == "Storage" {
			storage = s
		}
	}
	assert.Equal(t, hardwarev1.SubsystemHealth{Name: "Storage", State: "Warning", Message: "Disk 1: Warning"}, storage)
}

// A BMC whose only log is its lifecycle log says so in a condition and a
// Warning Event, instead of staying silent; its health is still read, and
// the Inventory is ready all the same.
func TestNoReadableEventLogIsNamed(t *testing.T) {
	env := newEnv(t)
	_, srv := redfishBMCWith(t, bmcsim.Options{LogServices: []bmcsim.LogService{
		{Owner: bmcsim.LogOfManager, ID: "Lclog", Name: "Lifecycle Controller Log", EntryType: "Event"},
	}})
	env.CreateReadyNode("no-log")
	env.CreateBMCSecret("no-log", bmcUser, bmcPassword)
	env.CreateInventory(framework.RedfishInventory("no-log", srv))
	env.Eventually(func() bool {
		return hasCondition(env, "no-log", equinixv1.BMCEventLogAvailable, metav1.ConditionFalse, equinixv1.ReasonNoEventLog) &&
			hw(env, "no-log").Health == "OK" && ready(env, "no-log")
	}, time.Minute, "a BMC without a readable event log was not reported")
	c := conditions.Get(env.Inventory("no-log").Status.Conditions, equinixv1.BMCEventLogAvailable)
	assert.True(t, strings.Contains(c.Message, "Lclog"), c.Message)
	assert.True(t, env.EventRecorded("no-log", equinixv1.ReasonNoEventLog))
}
