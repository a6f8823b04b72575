package metalsim

import (
	"net/http"
	"testing"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// eventTypes lists the types of events, in the order given.
func eventTypes(events []metalv1.Event) []string {
	out := make([]string, 0, len(events))
	for _, e := range events {
		out = append(out, e.GetType())
	}
	return out
}

func TestProjectEventsAreNewestFirstAndOutliveTheirDevice(t *testing.T) {
	e := newEnv(t)
	tm := DefaultTimings()
	a := e.createActive("node-a")
	b := e.createActive("node-b")
	e.clock.Advance(tm.Power)
	require.NoError(t, e.sim.AddDeviceEvent(a.GetId(), "harvester.install", "{{ device }} installed"))

	page, resp, err := e.client.EventsApi.FindProjectEvents(e.ctx, testProject).PerPage(3).Execute()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	require.Len(t, page.Events, 3)
	assert.Equal(t, int32(1), page.Meta.GetCurrentPage())
	assert.Greater(t, page.Meta.GetLastPage(), int32(1))
	assert.Equal(t, "node-a installed", page.Events[0].GetInterpolated(), "the newest event comes first")

	all, err := e.client.EventsApi.FindProjectEvents(e.ctx, testProject).PerPage(3).ExecuteWithPagination()
	require.NoError(t, err)
	require.Len(t, all.Events, int(page.Meta.GetTotal()))
	devices := map[string]int{}
	for i, ev := range all.Events {
		if i > 0 {
			assert.False(t, ev.GetCreatedAt().After(all.Events[i-1].GetCreatedAt()), "events %d and %d are out of order", i-1, i)
		}
		require.Len(t, ev.Relationships, 1)
		devices[ev.Relationships[0].Href]++
		for _, field := range []string{ev.GetId(), ev.GetHref(), ev.GetType(), ev.GetState(), ev.GetBody(), ev.GetInterpolated()} {
			assert.NotEmpty(t, field)
		}
	}
	assert.Len(t, devices, 2)
	assert.Equal(t, EventCreated, all.Events[len(all.Events)-1].GetType())

	_, err = e.client.DevicesApi.DeleteDevice(e.ctx, b.GetId()).Execute()
	require.NoError(t, err)
	e.clock.Advance(tm.Deprovision)
	_, resp, err = e.client.EventsApi.FindDeviceEvents(e.ctx, b.GetId()).Execute()
	requireAPIError(t, resp, err, http.StatusNotFound, "")
	after, err := e.client.EventsApi.FindProjectEvents(e.ctx, testProject).PerPage(100).ExecuteWithPagination()
	require.NoError(t, err)
	assert.Equal(t, EventDeleted, after.Events[0].GetType())
	assert.Equal(t, "/metal/v1/devices/"+b.GetId(), after.Events[0].Relationships[0].Href)
	assert.Equal(t, len(all.Events)+2, len(after.Events), "deprovisioning and deletion were added, nothing was dropped")
}

func TestProjectEventsOfOtherProjects(t *testing.T) {
	e := newEnv(t)
	e.createActive("node-a")
	_, resp, err := e.other.EventsApi.FindProjectEvents(e.ctx, testProject).Execute()
	requireAPIError(t, resp, err, http.StatusForbidden, "not authorized")
	_, resp, err = e.client.EventsApi.FindProjectEvents(e.ctx, "00000000-0000-4000-8000-000000000000").Execute()
	requireAPIError(t, resp, err, http.StatusNotFound, "")
	list, _, err := e.other.EventsApi.FindProjectEvents(e.ctx, otherProject).Execute()
	require.NoError(t, err)
	assert.Empty(t, list.Events)
	assert.Equal(t, int32(1), list.Meta.GetLastPage())
}

// A regular OS walks through the platform's provisioning steps; every later
// boot goes through DHCP again.
func TestProvisioningAndBootEvents(t *testing.T) {
	e := newEnv(t)
	tm := DefaultTimings()
	in := ipxeInput("node-os")
	in.OperatingSystem, in.IpxeScriptUrl = "ubuntu_24_04", nil
	d := e.create(in)
	e.clock.Advance(tm.Queue + tm.Provision)
	events, err := e.sim.DeviceEvents(d.GetId())
	require.NoError(t, err)
	assert.Equal(t, []string{EventActive, EventProvisioned, EventOSInstalled, EventDHCP, EventProvisioning, EventCreated}, eventTypes(events))
	assert.Equal(t, "Device connected to DHCP system", events[3].GetBody())
	assert.Equal(t, "Operating system packages installed", events[2].GetBody())

	_, err = e.action(d.GetId(), metalv1.DeviceActionInput{Type: metalv1.DEVICEACTIONINPUTTYPE_REBOOT})
	require.NoError(t, err)
	e.clock.Advance(tm.Power)
	events, err = e.sim.DeviceEvents(d.GetId())
	require.NoError(t, err)
	assert.Equal(t, []string{EventDHCP, EventReboot}, eventTypes(events[:2]))
}
