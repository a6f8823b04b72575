package bmcsim

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Log services named and typed as BMCs the project did not write serve
// them: under the system and the manager, with or without LogEntryType,
// and entries with or without EntryType.
func TestSeveralLogServices(t *testing.T) {
	f := newFixture(t, Options{LogServices: []LogService{
		{Owner: LogOfSystem, ID: "Log1", Name: "System Log 1", EntryType: "SEL"},
		{Owner: LogOfManager, ID: "Lclog", Name: "Lifecycle Log", EntryType: "Oem"},
	}})
	_, sysLogs := f.do(t, http.MethodGet, "/redfish/v1/Systems/1/LogServices", nil, true)
	assert.Equal(t, []any{map[string]any{"@odata.id": "/redfish/v1/Systems/1/LogServices/Log1"}}, sysLogs["Members"])
	_, mgrLogs := f.do(t, http.MethodGet, "/redfish/v1/Managers/1/LogServices", nil, true)
	assert.Equal(t, []any{map[string]any{"@odata.id": "/redfish/v1/Managers/1/LogServices/Lclog"}}, mgrLogs["Members"])
	_, svc := f.do(t, http.MethodGet, "/redfish/v1/Systems/1/LogServices/Log1", nil, true)
	assert.NotContains(t, svc, "LogEntryType", "DMTF's mockup leaves it out")

	f.bmc.AddLogEntry("Warning", "fan slow")
	_, err := f.bmc.AddLogEntryTo("Lclog", "OK", "BIOS setting changed")
	require.NoError(t, err)
	_, err = f.bmc.AddLogEntryTo("IML", "OK", "x")
	assert.Error(t, err)
	_, entries := f.do(t, http.MethodGet, "/redfish/v1/Systems/1/LogServices/Log1/Entries", nil, true)
	first := entries["Members"].([]any)[0].(map[string]any)
	assert.Equal(t, "SEL", first["EntryType"])
	assert.Equal(t, "fan slow", first["Message"])
	resp, entry := f.do(t, http.MethodGet, "/redfish/v1/Managers/1/LogServices/Lclog/Entries/1", nil, true)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "Oem", entry["EntryType"])
}

// An older BMC describes its drives through SimpleStorage only, health
// included.
func TestSimpleStorageOnly(t *testing.T) {
	f := newFixture(t, Options{SimpleStorageOnly: true})
	require.NoError(t, f.bmc.SetHealth(PartDrive, "Disk 1", HealthWarning))
	_, sys := f.do(t, http.MethodGet, "/redfish/v1/Systems/1", nil, true)
	assert.NotContains(t, sys, "Storage")
	require.Contains(t, sys, "SimpleStorage")
	resp, _ := f.do(t, http.MethodGet, "/redfish/v1/Systems/1/Storage", nil, true)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	_, ss := f.do(t, http.MethodGet, "/redfish/v1/Systems/1/SimpleStorage/1", nil, true)
	devices := ss["Devices"].([]any)
	require.Len(t, devices, 2)
	assert.Equal(t, map[string]any{"State": "Enabled", "Health": "Warning"}, devices[1].(map[string]any)["Status"])
}

// A VLAN and the host interface's end are listed beside the ports, as
// DMTF's public-rackmount1 mockup lists them.
func TestVLANAndHostInterfaceNICs(t *testing.T) {
	hw := DefaultHardware()
	hw.NICs = append(hw.NICs, NIC{ID: "VLAN1", MAC: hw.NICs[0].MAC, SpeedMbps: 25000, Kind: NICVLAN, Parent: "NIC1"},
		NIC{ID: "ToManager", MAC: "aa:bb:cc:dd:ee:fe", SpeedMbps: 100, Kind: NICHostInterface})
	f := newFixture(t, Options{Hardware: &hw})
	_, vlan := f.do(t, http.MethodGet, "/redfish/v1/Systems/1/EthernetInterfaces/VLAN1", nil, true)
	assert.Equal(t, "Virtual", vlan["EthernetInterfaceType"])
	assert.Equal(t, true, vlan["VLAN"].(map[string]any)["VLANEnable"])
	_, host := f.do(t, http.MethodGet, "/redfish/v1/Systems/1/EthernetInterfaces/ToManager", nil, true)
	assert.NotContains(t, host, "EthernetInterfaceType")
	hi := host["Links"].(map[string]any)["HostInterface"].(map[string]any)["@odata.id"].(string)
	resp, _ := f.do(t, http.MethodGet, hi, nil, true)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	_, port := f.do(t, http.MethodGet, "/redfish/v1/Systems/1/EthernetInterfaces/NIC1", nil, true)
	assert.Equal(t, "Physical", port["EthernetInterfaceType"])
}

func login(t *testing.T, f *fixture, password string) (int, string) {
	t.Helper()
	resp, _ := f.do(t, http.MethodPost, "/redfish/v1/SessionService/Sessions", map[string]string{"UserName": user, "Password": password}, false)
	return resp.StatusCode, resp.Header.Get("Location")
}

// Past its session limit the BMC refuses a login with 503, as an iDRAC
// does, and counts the most sessions ever open at once.
func TestSessionLimit(t *testing.T) {
	f := newFixture(t, Options{MaxSessions: 2})
	code, first := login(t, f, pass)
	require.Equal(t, http.StatusCreated, code)
	code, _ = login(t, f, pass)
	require.Equal(t, http.StatusCreated, code)
	code, _ = login(t, f, pass)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	resp, _ := f.do(t, http.MethodDelete, first, nil, true)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	code, _ = login(t, f, pass)
	assert.Equal(t, http.StatusCreated, code)
	assert.Equal(t, LoginStats{Accepted: 3, MostSessions: 2}, f.bmc.Logins())
	f.bmc.DropSessions()
	assert.Equal(t, 0, f.bmc.Sessions())
}

// Three refused logins within a minute lock the account for five: the
// right password is refused too until then.
func TestLockout(t *testing.T) {
	f := newFixture(t, Options{Lockout: &Lockout{Failures: 3, Window: time.Minute, Duration: 5 * time.Minute}})
	for range 2 {
		code, _ := login(t, f, "wrong")
		require.Equal(t, http.StatusUnauthorized, code)
		f.now = f.now.Add(40 * time.Second)
	}
	code, _ := login(t, f, pass)
	assert.Equal(t, http.StatusCreated, code, "the first failure is out of the window")
	code, _ = login(t, f, "wrong")
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = login(t, f, "wrong")
	require.Equal(t, http.StatusUnauthorized, code)
	assert.True(t, f.bmc.Logins().Locked)
	code, _ = login(t, f, pass)
	assert.Equal(t, http.StatusUnauthorized, code, "locked: the right password is refused")
	resp, _ := f.do(t, http.MethodGet, "/redfish/v1/Systems/1", nil, true)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "basic auth too")
	f.now = f.now.Add(5 * time.Minute)
	code, _ = login(t, f, pass)
	assert.Equal(t, http.StatusCreated, code)
	assert.Equal(t, LoginStats{Accepted: 2, Refused: 6, MostSessions: 1}, f.bmc.Logins(), "the first session was never used again")
}

func TestMostAtOnce(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	assert.Equal(t, 0, MostAtOnce(nil))
	assert.Equal(t, 1, MostAtOnce([]Span{{at(0), at(5)}, {at(5), at(9)}}), "one ends as the next starts")
	assert.Equal(t, 2, MostAtOnce([]Span{{at(0), at(5)}, {at(4), at(9)}, {at(6), at(7)}}))
	assert.Equal(t, 2, MostAtOnce([]Span{{at(0), at(5)}, {at(3), at(3)}}), "a session opened and never used again")
}

// A session the BMC forgot was in use until its last request, not until
// the BMC forgot it: its client may have been killed long before.
func TestForgottenSessionEndsAtItsLastUse(t *testing.T) {
	f := newFixture(t, Options{})
	code, _ := login(t, f, pass)
	require.Equal(t, http.StatusCreated, code)
	code, _ = login(t, f, pass) // the first one's client was killed
	require.Equal(t, http.StatusCreated, code)
	f.bmc.DropSessions()
	assert.Equal(t, 1, f.bmc.Logins().MostSessions)
}
