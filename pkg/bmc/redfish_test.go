package bmc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/pkg/failure"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// A CA bundle does not make a certificate for another name acceptable.
func TestRedfishCertificateForAnotherName(t *testing.T) {
	sim := bmcsim.New(bmcsim.Options{Username: testUser, Password: testPassword})
	// The certificate names 127.0.0.1, ::1 and localhost, not 127.0.0.2.
	srv, err := bmcsim.NewServer(sim, "127.0.0.2:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	ep := Endpoint{Protocol: ProtocolRedfish, Host: srv.Host, Port: srv.Port, CABundle: srv.CACertPEM, Username: testUser, Password: testPassword}
	_, err = Dial(context.Background(), ep)
	require.Equal(t, failure.TLS, failure.ClassOf(err), "%v", err)
	assert.Contains(t, err.Error(), "127.0.0.2")
}

func TestRedfishPlainHTTPAndNotRedfish(t *testing.T) {
	ctx := context.Background()
	plain := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(plain.Close)
	u, _ := url.Parse(plain.URL)
	port, _ := strconv.Atoi(u.Port())
	ep := Endpoint{Protocol: ProtocolRedfish, Host: "127.0.0.1", Port: port, Username: testUser, Password: testPassword, InsecureSkipVerify: true, Timeout: 2 * time.Second}
	_, err := Dial(ctx, ep)
	assert.Equal(t, failure.ProtocolMismatch, failure.ClassOf(err), "a plain HTTP port: %v", err)

	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("<html>router login</html>"))
	}))
	t.Cleanup(tlsSrv.Close)
	u, _ = url.Parse(tlsSrv.URL)
	ep.Port, _ = strconv.Atoi(u.Port())
	_, err = Dial(ctx, ep)
	assert.Equal(t, failure.ProtocolMismatch, failure.ClassOf(err), "an HTTPS page that is not Redfish: %v", err)
}

func TestRedfishSessionLifecycle(t *testing.T) {
	tg, sim, _ := redfishTarget(t)
	ctx := context.Background()
	c, err := Dial(ctx, tg.ep)
	require.NoError(t, err)
	assert.Equal(t, 1, sim.Sessions(), "Dial logs in with a session")

	// The BMC forgot the session (a reboot): the client logs in again.
	id := sim.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultUnauthorized, PathPrefix: "/redfish/v1/Systems", Count: 1})
	st, err := c.PowerState(ctx)
	require.NoError(t, err)
	assert.Equal(t, PowerOn, st)
	assert.Equal(t, 1, sim.FaultFired(id))

	// A refused power command is sent again after the new login, and the
	// BMC runs it once.
	sim.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultUnauthorized, PathPrefix: "/redfish/v1/Systems/1/Actions", Count: 1})
	require.NoError(t, c.Power(ctx, PowerActionOff))
	assert.Equal(t, []string{"ForceOff"}, sim.Resets())

	require.NoError(t, c.Close())
	assert.Equal(t, 0, sim.Sessions(), "Close logs out every session it opened")
	_, err = c.PowerState(ctx)
	assert.Equal(t, failure.Invalid, failure.ClassOf(err))
	require.NoError(t, c.Close(), "Close twice is fine")
}

func TestRedfishBasicAuthFallback(t *testing.T) {
	sim := bmcsim.New(bmcsim.Options{Username: testUser, Password: testPassword, NoSessionService: true})
	srv, err := bmcsim.NewServer(sim, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	ep := Endpoint{Protocol: ProtocolRedfish, Host: srv.Host, Port: srv.Port, CABundle: srv.CACertPEM, Username: testUser, Password: testPassword}
	c, err := Dial(context.Background(), ep)
	require.NoError(t, err)
	st, err := c.PowerState(context.Background())
	require.NoError(t, err)
	assert.Equal(t, PowerOn, st)
	require.NoError(t, c.Close())

	ep.Password = "wrong"
	_, err = Dial(context.Background(), ep)
	assert.Equal(t, failure.Unauthorized, failure.ClassOf(err), "%v", err)
}

func TestRedfishFaults(t *testing.T) {
	tg, sim, srv := redfishTarget(t)
	ctx := context.Background()
	c := dial(t, tg.ep)

	sim.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultServerError, Status: http.StatusServiceUnavailable, Count: 1})
	_, err := c.Health(ctx)
	assert.Equal(t, failure.Transient, failure.ClassOf(err), "%v", err)
	_, err = c.Health(ctx)
	require.NoError(t, err, "the next poll works again")

	// A BMC that reboots refuses connections for a while.
	require.NoError(t, srv.GoAway())
	_, err = c.PowerState(ctx)
	assert.Equal(t, failure.Unreachable, failure.ClassOf(err), "%v", err)
	require.NoError(t, srv.ComeBack())
	assert.Eventually(t, func() bool {
		_, err := c.PowerState(ctx)
		return err == nil
	}, 5*time.Second, 50*time.Millisecond)

	// A 500 on the power command is a Transient error, and not retried.
	sim.InjectFault(bmcsim.Fault{Kind: bmcsim.FaultServerError, PathPrefix: "/redfish/v1/Systems/1/Actions", Count: 1})
	err = c.Power(ctx, PowerActionOff)
	assert.Equal(t, failure.Transient, failure.ClassOf(err), "%v", err)
	assert.Empty(t, sim.Resets())
}

func TestRedfishRebootOfAnOffHost(t *testing.T) {
	tg, sim, _ := redfishTarget(t)
	ctx := context.Background()
	c := dial(t, tg.ep)
	require.NoError(t, sim.SetPowerState("Off"))
	require.NoError(t, c.Power(ctx, PowerActionReboot))
	assert.Equal(t, []string{"PowerCycle"}, sim.Resets(), "PowerCycle starts a host that is off; ForceRestart would be refused")
	st, err := c.PowerState(ctx)
	require.NoError(t, err)
	assert.Equal(t, PowerOn, st)
}

func TestRedfishPowerTransitions(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	sim := bmcsim.New(bmcsim.Options{Username: testUser, Password: testPassword, PowerTransition: time.Minute, Now: clock})
	srv, err := bmcsim.NewServer(sim, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	c := dial(t, Endpoint{Protocol: ProtocolRedfish, Host: srv.Host, Port: srv.Port, CABundle: srv.CACertPEM, Username: testUser, Password: testPassword})
	ctx := context.Background()
	require.NoError(t, c.Power(ctx, PowerActionReboot))
	st, err := c.PowerState(ctx)
	require.NoError(t, err)
	assert.Equal(t, PowerUnknown, st, "PoweringOn reads as unknown until the BMC settles")
	now = now.Add(time.Minute)
	st, err = c.PowerState(ctx)
	require.NoError(t, err)
	assert.Equal(t, PowerOn, st)
}
