package bmc

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// chassisBMC serves the server as Systems/1 beside neighbours "0" and "2":
// "0" sorts first, so a client that took the first system would act on it.
func chassisBMC(t *testing.T) (*bmcsim.BMC, Endpoint) {
	t.Helper()
	sim := bmcsim.New(bmcsim.Options{Username: testUser, Password: testPassword, OtherSystems: []string{"0", "2"}})
	srv, err := bmcsim.NewServer(sim, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return sim, Endpoint{Protocol: ProtocolRedfish, Host: srv.Host, Port: srv.Port, CABundle: srv.CACertPEM,
		Username: testUser, Password: testPassword}
}

// A BMC that lists several systems, none chosen: refused, naming them, and
// nothing sent to any system.
func TestRedfishSeveralSystemsNoneChosen(t *testing.T) {
	sim, ep := chassisBMC(t)
	_, err := Dial(context.Background(), ep)
	require.Error(t, err)
	assert.Equal(t, failure.Invalid, failure.ClassOf(err))
	assert.ErrorContains(t, err, "lists 3 computer systems (0, 1, 2): set systemID")
	assert.Empty(t, sim.Resets())
	assert.Empty(t, sim.OtherSystemResets())
}

// The system named is the one read and powered; its neighbours are not.
func TestRedfishChosenSystem(t *testing.T) {
	sim, ep := chassisBMC(t)
	ep.SystemID = "1"
	c := dial(t, ep)
	ctx := context.Background()
	inv, err := c.Inventory(ctx)
	require.NoError(t, err)
	assert.Equal(t, bmcsim.DefaultHardware().SerialNumber, inv.SerialNumber)
	require.NoError(t, c.Power(ctx, PowerActionOff))
	assert.Equal(t, []string{"ForceOff"}, sim.Resets())
	assert.Empty(t, sim.OtherSystemResets())
}

// A systemID the BMC does not list is refused with the ones it does.
func TestRedfishUnknownSystem(t *testing.T) {
	_, ep := chassisBMC(t)
	ep.SystemID = "7"
	_, err := Dial(context.Background(), ep)
	assert.Equal(t, failure.Invalid, failure.ClassOf(err))
	assert.ErrorContains(t, err, `lists no computer system "7"; it lists 0, 1, 2`)
}
