package metalsim

import (
	"testing"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNotificationsGiveAJoinAgentWhatItNeeds(t *testing.T) {
	e := newEnv(t)
	tm := DefaultTimings()
	rec := record(e.sim)
	d := e.create(ipxeInput("node-1"))

	created := rec.of(DeviceCreated)
	require.Len(t, created, 1)
	assert.Equal(t, d.GetId(), created[0].DeviceID)
	assert.Equal(t, testProject, created[0].ProjectID)
	assert.Equal(t, metalv1.DEVICESTATE_QUEUED, created[0].State)

	// Without any request, Tick applies due transitions and notifies.
	e.clock.Advance(tm.Queue + tm.IPXEBoot)
	e.sim.Tick()

	var states []metalv1.DeviceState
	for _, n := range rec.of(DeviceStateChanged) {
		states = append(states, n.State)
	}
	assert.Equal(t, []metalv1.DeviceState{metalv1.DEVICESTATE_PROVISIONING, metalv1.DEVICESTATE_ACTIVE}, states)

	boots := rec.of(DeviceBooted)
	require.Len(t, boots, 1)
	b := boots[0]
	assert.Equal(t, testStart.Add(tm.Queue+tm.IPXEBoot), b.Time)
	assert.Equal(t, metalv1.DEVICESTATE_ACTIVE, b.State)
	assert.Equal(t, BootProvision, b.Boot.Reason)
	assert.True(t, b.Boot.PXE)
	assert.Equal(t, testIPXEURL, b.Boot.IPXEScriptURL)
	assert.False(t, b.Boot.ScriptFromUserdata)
	assert.Equal(t, "#cloud-config\nhostname: node-1\n", b.Userdata)
	assert.Equal(t, "layer3", b.Network.Type)
	require.Len(t, b.Network.MACs, 2)
	assert.Equal(t, e.port(&b.Device, "eth0").Data.GetMac(), b.Network.MACs["eth0"])
	require.Len(t, b.Network.Addresses, 3)
	assert.True(t, b.Network.Addresses[0].Management)
	assert.Equal(t, "node-1", b.Device.GetHostname())
	assert.Equal(t, "c3.small.x86", b.Device.Plan.GetSlug(), "the snapshot includes every nested object")
}

func TestBootFromUserdataScript(t *testing.T) {
	e := newEnv(t)
	rec := record(e.sim)
	script := "#!ipxe\nchain https://boot.example.com/x.ipxe\n"
	e.createActive("node-1", func(in *metalv1.DeviceCreateInMetroInput) {
		in.IpxeScriptUrl = nil
		in.Userdata = ptr(script)
	})
	boots := rec.of(DeviceBooted)
	require.Len(t, boots, 1)
	assert.True(t, boots[0].Boot.ScriptFromUserdata)
	assert.Equal(t, script, boots[0].Boot.IPXEScript)
	assert.Empty(t, boots[0].Boot.IPXEScriptURL)
}

func TestNetworkChangesAreNotified(t *testing.T) {
	tm := DefaultTimings()
	tm.PortConversion = 0
	e := newEnv(t, withTimings(tm))
	d := e.createActive("node-1")
	rec := record(e.sim)
	n := netClient{env: e, deviceID: d.GetId()}
	n.convert2(n.portID("bond0"))

	changes := rec.of(DeviceNetworkChanged)
	require.Len(t, changes, 1)
	assert.Equal(t, "layer2-bonded", changes[0].Network.Type)
	assert.Empty(t, changes[0].Network.Addresses)
}

func TestSubscribersMayCallBackAndUnsubscribe(t *testing.T) {
	e := newEnv(t)
	var seen []NotificationType
	unsubscribe := e.sim.Subscribe(func(n Notification) {
		seen = append(seen, n.Type)
		if n.Type == DeviceBooted {
			// A join agent records the install outcome from inside the callback.
			require.NoError(t, e.sim.AddDeviceEvent(n.DeviceID, "harvester.installed", "{{ device }} joined"))
		}
	})
	d := e.createActive("node-1")
	unsubscribe()
	_, err := e.client.DevicesApi.DeleteDevice(e.ctx, d.GetId()).Execute()
	require.NoError(t, err)

	assert.Equal(t, []NotificationType{DeviceCreated, DeviceStateChanged, DeviceStateChanged, DeviceBooted}, seen)
	events, err := e.sim.DeviceEvents(d.GetId())
	require.NoError(t, err)
	assert.Equal(t, "node-1 joined", events[1].GetInterpolated())
	assert.ErrorIs(t, e.sim.AddDeviceEvent("nope", "x", "y"), ErrNotFound)
}
