package bmc

import (
	"context"
	"fmt"
	"testing"
	"time"

	ipmiclient "github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/types"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim/ipmisim"
)

const (
	testUser     = "admin"
	testPassword = "Zq7-never-printed"
)

// target is one real BMC implementation the contract runs against, with
// the test's hands on it.
type target struct {
	name string
	ep   Endpoint
	// inventory lists the facts this BMC reports.
	inventory Inventory
	// addLog adds one SEL entry and returns its message as the driver
	// renders it.
	addLog   func(t *testing.T, n int) string
	clearLog func(t *testing.T)
	// breakPart makes one part fail; the driver must report it in sub,
	// naming part.
	breakPart func(t *testing.T) (sub Subsystem, part string)
	// commands counts the power commands the BMC received.
	commands func() int
	// poweredOn is the BMC's own view of the host power.
	poweredOn func(t *testing.T) bool
	// slow puts delay in front of every answer and returns the endpoint
	// to use (the IPMI path goes through a relay).
	slow func(t *testing.T, delay time.Duration) Endpoint
	// bootOverride is the boot target the BMC holds for the next start,
	// in Redfish's words.
	bootOverride func() string
	// bootCommands counts the boot override requests the BMC received.
	bootCommands func() int
	// transitions are the host's power changes, with what each start
	// booted from.
	transitions func() []bmcsim.PowerTransition
}

// testUUID is the IPMI target's host UUID.
const testUUID = "6c0ffee0-1234-4abc-8def-0123456789ab"

func redfishTarget(t *testing.T) (*target, *bmcsim.BMC, *bmcsim.Server) {
	t.Helper()
	sim := bmcsim.New(bmcsim.Options{Username: testUser, Password: testPassword, LogPageSize: 3})
	srv, err := bmcsim.NewServer(sim, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	hw := bmcsim.DefaultHardware()
	return &target{
		name: "redfish",
		ep:   Endpoint{Protocol: ProtocolRedfish, Host: srv.Host, Port: srv.Port, CABundle: srv.CACertPEM, Username: testUser, Password: testPassword, Timeout: 2 * time.Second},
		inventory: Inventory{Manufacturer: hw.Manufacturer, Model: hw.Model, SerialNumber: hw.SerialNumber, BIOSVersion: hw.BIOSVersion,
			CPUCount: 2, CPUModel: "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", MemoryBytes: 128 << 30,
			Drives:     []Drive{{Name: "Disk 0", SizeBytes: 480103981056, MediaType: "SSD", Protocol: "SATA"}, {Name: "Disk 1", SizeBytes: 3840755982336, MediaType: "SSD", Protocol: "NVMe"}},
			NICs:       []NIC{{Name: "NIC1", MACAddress: "3c:ec:ef:00:00:01", SpeedMbps: 25000}, {Name: "NIC2", MACAddress: "3c:ec:ef:00:00:02", SpeedMbps: 25000}},
			SystemUUID: hw.UUID},
		addLog: func(_ *testing.T, n int) string {
			msg := fmt.Sprintf("Correctable ECC error %d on DIMM A1", n)
			sim.AddLogEntry("Warning", msg)
			return msg
		},
		clearLog: func(*testing.T) { sim.ClearLog() },
		breakPart: func(t *testing.T) (Subsystem, string) {
			require.NoError(t, sim.SetHealth(bmcsim.PartPowerSupply, "PSU 2", bmcsim.HealthCritical))
			return SubsystemPowerSupplies, "PSU 2"
		},
		commands:  func() int { return len(sim.Resets()) },
		poweredOn: func(*testing.T) bool { return sim.PowerState() == "On" },
		slow: func(t *testing.T, delay time.Duration) Endpoint {
			id := sim.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultLatency, Latency: delay})
			t.Cleanup(func() { sim.RemoveFault(id) })
			return Endpoint{Protocol: ProtocolRedfish, Host: srv.Host, Port: srv.Port, CABundle: srv.CACertPEM, Username: testUser, Password: testPassword}
		},
		bootOverride: func() string {
			if o := sim.BootOverride(); o.Enabled != bmcsim.BootDisabled {
				return o.Target
			}
			return bmcsim.BootNone
		},
		bootCommands: func() int { return countOf(sim.RequestLog(), "PATCH "+systemURI) },
		transitions:  sim.PowerTransitions,
	}, sim, srv
}

func ipmiTarget(t *testing.T) (*target, *ipmisim.Sim) {
	t.Helper()
	sim := ipmisim.Require(t, ipmisim.Options{Username: testUser, Password: testPassword, Manufacturer: "Supermicro", Model: "SYS-510P-M", SerialNumber: "S123456X1234567", UUID: testUUID})
	relays := []*ipmisim.Relay{}
	return &target{
		name:      "ipmi",
		ep:        Endpoint{Protocol: ProtocolIPMI, Host: sim.Host, Port: sim.Port, Username: testUser, Password: testPassword, Timeout: 2 * time.Second},
		inventory: Inventory{Manufacturer: "Supermicro", Model: "SYS-510P-M", SerialNumber: "S123456X1234567", SystemUUID: testUUID},
		addLog: func(t *testing.T, n int) string {
			// A correctable ECC event (memory sensor, offset 0) on sensor 5,
			// event data 2 carrying n so that every entry differs.
			_, err := sim.AddSEL(0x0c, ipmisim.SensorDIMM, 0x6f, 0x00, byte(n), 0)
			require.NoError(t, err)
			return "Memory #0x05"
		},
		clearLog: func(t *testing.T) { clearSEL(t, sim) },
		breakPart: func(t *testing.T) (Subsystem, string) {
			require.NoError(t, sim.SetSensorBit(ipmisim.SensorPSU, 1, true)) // offset 1: failure detected
			return SubsystemPowerSupplies, "PSU1 Status"
		},
		commands: func() int { return len(sim.ChassisControls()) },
		poweredOn: func(t *testing.T) bool {
			on, err := sim.PowerOn()
			require.NoError(t, err)
			return on
		},
		slow: func(t *testing.T, delay time.Duration) Endpoint {
			if len(relays) == 0 {
				relays = append(relays, ipmisim.RequireRelay(t, sim))
			}
			relays[0].SetDelay(delay)
			return Endpoint{Protocol: ProtocolIPMI, Host: "127.0.0.1", Port: relays[0].Port(), Username: testUser, Password: testPassword}
		},
		bootOverride: sim.BootOverride,
		bootCommands: func() int { return len(bootOptionSets(sim)) },
		transitions:  sim.PowerTransitions,
	}, sim
}

const systemURI = "/redfish/v1/Systems/1"

func countOf(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if l == s {
			n++
		}
	}
	return n
}

// bootOptionSets are the Set System Boot Options requests (chassis NetFn
// 00h, command 08h) the BMC received, as their data bytes.
func bootOptionSets(sim *ipmisim.Sim) []string {
	var out []string
	for _, m := range sim.Messages() {
		if m.NetFn == 0 && m.Cmd == 0x08 {
			out = append(out, m.Data)
		}
	}
	return out
}

// clearSEL clears the SEL as an operator would with "ipmitool sel clear",
// through go-ipmi directly: the driver has no reason to offer it.
func clearSEL(t *testing.T, sim *ipmisim.Sim) {
	t.Helper()
	ctx := context.Background()
	c, err := ipmiclient.NewClient(sim.Host, sim.Port, testUser, testPassword)
	require.NoError(t, err)
	// Name the cipher suite: asking ipmi_sim for its list times out.
	c.WithCipherSuiteID(types.CipherSuiteID3)
	require.NoError(t, c.Connect(ctx))
	// ipmi_sim ends a session without answering Close Session: do not wait.
	defer func() { _ = c.WithTimeout(100 * time.Millisecond).WithRetry(0).Close(ctx) }()
	res, err := c.ReserveSEL(ctx)
	require.NoError(t, err)
	_, err = c.ClearSEL(ctx, res.ReservationID)
	require.NoError(t, err)
}
