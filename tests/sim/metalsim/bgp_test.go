package metalsim

import (
	"net/http"
	"testing"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (e *env) enableBGP(md5 *string) {
	e.t.Helper()
	resp, err := e.client.BGPApi.RequestBgpConfig(e.ctx, testProject).BgpConfigRequestInput(metalv1.BgpConfigRequestInput{
		Asn: 65000, DeploymentType: metalv1.BGPCONFIGREQUESTINPUTDEPLOYMENTTYPE_LOCAL, Md5: md5,
	}).Execute()
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusNoContent, resp.StatusCode)
	e.clock.Advance(DefaultTimings().BGPEnable)
}

func (e *env) createSession(deviceID string, family metalv1.BGPSessionInputAddressFamily, defaultRoute bool) (*metalv1.BgpSession, *http.Response, error) {
	return e.client.DevicesApi.CreateBgpSession(e.ctx, deviceID).
		BGPSessionInput(metalv1.BGPSessionInput{AddressFamily: &family, DefaultRoute: &defaultRoute}).Execute()
}

func (e *env) neighbors(deviceID string) []metalv1.BgpNeighborData {
	e.t.Helper()
	n, resp, err := e.client.DevicesApi.GetBgpNeighborData(e.ctx, deviceID).Execute()
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, resp.StatusCode)
	return n.BgpNeighbors
}

func TestBGP(t *testing.T) {
	e := newEnv(t)
	bgp := e.client.BGPApi
	d := e.createActive("node-1")

	cfg, resp, err := bgp.FindBgpConfigByProject(e.ctx, testProject).Execute()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, cfg.GetId(), "no config yet, still 200")

	_, resp, err = e.createSession(d.GetId(), metalv1.BGPSESSIONINPUTADDRESSFAMILY_IPV4, false)
	requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "not enabled")

	resp, err = bgp.RequestBgpConfig(e.ctx, testProject).BgpConfigRequestInput(metalv1.BgpConfigRequestInput{
		Asn: 65000, DeploymentType: metalv1.BGPCONFIGREQUESTINPUTDEPLOYMENTTYPE_LOCAL, Md5: ptr("Secret12345"),
	}).Execute()
	require.NoError(t, err)
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)

	cfg, _, err = bgp.FindBgpConfigByProject(e.ctx, testProject).Execute()
	require.NoError(t, err)
	assert.NotEmpty(t, cfg.GetId())
	assert.Equal(t, metalv1.BGPCONFIGSTATUS_REQUESTED, cfg.GetStatus())
	e.clock.Advance(DefaultTimings().BGPEnable)
	cfg, _, err = bgp.FindBgpConfigByProject(e.ctx, testProject).Execute()
	require.NoError(t, err)
	assert.Equal(t, metalv1.BGPCONFIGSTATUS_ENABLED, cfg.GetStatus())
	assert.Equal(t, int64(65000), cfg.GetAsn())
	assert.Equal(t, int32(10), cfg.GetMaxPrefix())
	assert.Equal(t, "Secret12345", cfg.GetMd5(), "the config carries the password")

	resp, err = bgp.RequestBgpConfig(e.ctx, testProject).BgpConfigRequestInput(metalv1.BgpConfigRequestInput{
		Asn: 65000, DeploymentType: metalv1.BGPCONFIGREQUESTINPUTDEPLOYMENTTYPE_LOCAL,
	}).Execute()
	requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "already enabled")

	session, resp, err := e.createSession(d.GetId(), metalv1.BGPSESSIONINPUTADDRESSFAMILY_IPV4, false)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, metalv1.BGPSESSIONADDRESSFAMILY_IPV4, session.GetAddressFamily())
	assert.Equal(t, "unknown", session.GetStatus(), "no routers report on it")

	_, resp, err = e.createSession(d.GetId(), metalv1.BGPSESSIONINPUTADDRESSFAMILY_IPV4, false)
	requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "already has session")

	sessions, _, err := e.client.DevicesApi.FindBgpSessions(e.ctx, d.GetId()).Execute()
	require.NoError(t, err)
	assert.Len(t, sessions.BgpSessions, 1)

	neighbors := e.neighbors(d.GetId())
	require.Len(t, neighbors, 1)
	n := neighbors[0]
	assert.Equal(t, int32(4), n.GetAddressFamily())
	assert.Equal(t, int32(65000), n.GetCustomerAs())
	assert.Equal(t, int32(65530), n.GetPeerAs())
	assert.Equal(t, []string{"169.254.255.1", "169.254.255.2"}, n.PeerIps)
	assert.Equal(t, d.IpAddresses[2].GetAddress(), n.GetCustomerIp(), "the private IPv4 peers")
	assert.True(t, n.GetMd5Enabled())
	assert.Equal(t, "Secret12345", n.GetMd5Password())
	assert.True(t, n.GetMultihop())
	assert.Empty(t, n.RoutesIn, "no Elastic IPs yet")
	assert.Empty(t, n.RoutesOut, "no default route asked for")

	got, _, err := bgp.FindBgpSessionById(e.ctx, session.GetId()).Execute()
	require.NoError(t, err)
	assert.Equal(t, session.GetId(), got.GetId())
	resp, err = bgp.DeleteBgpSession(e.ctx, session.GetId()).Execute()
	require.NoError(t, err)
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	_, resp, err = bgp.FindBgpSessionById(e.ctx, session.GetId()).Execute()
	requireAPIError(t, resp, err, http.StatusNotFound, "")
	assert.Empty(t, e.neighbors(d.GetId()))
}

func TestBGPConfigRules(t *testing.T) {
	e := newEnv(t)
	request := func(in metalv1.BgpConfigRequestInput) (*http.Response, error) {
		return e.client.BGPApi.RequestBgpConfig(e.ctx, testProject).BgpConfigRequestInput(in).Execute()
	}
	resp, err := request(metalv1.BgpConfigRequestInput{Asn: 65000, DeploymentType: "local", Md5: ptr("short")})
	requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "")

	// The Equinix CCM sends an empty password when none is configured.
	_, err = request(metalv1.BgpConfigRequestInput{Asn: 65000, DeploymentType: "local", Md5: ptr(""), UseCase: ptr("kubernetes-load-balancer")})
	require.NoError(t, err)
	cfg, _, err := e.client.BGPApi.FindBgpConfigByProject(e.ctx, testProject).Execute()
	require.NoError(t, err)
	assert.Empty(t, cfg.GetMd5())

	_, err = e.other.BGPApi.RequestBgpConfig(e.ctx, otherProject).BgpConfigRequestInput(
		metalv1.BgpConfigRequestInput{Asn: 65100, DeploymentType: metalv1.BGPCONFIGREQUESTINPUTDEPLOYMENTTYPE_GLOBAL}).Execute()
	require.NoError(t, err)
	e.clock.Advance(DefaultTimings().BGPEnable)
	cfg, _, err = e.other.BGPApi.FindBgpConfigByProject(e.ctx, otherProject).Execute()
	require.NoError(t, err)
	assert.Equal(t, metalv1.BGPCONFIGSTATUS_REQUESTED, cfg.GetStatus(), "global BGP waits for a review")
}

func TestBGPNeighborRoutes(t *testing.T) {
	e := newEnv(t)
	d := e.createActive("node-1")
	e.enableBGP(nil)
	vip, err := e.sim.AddIPReservation(testProject, IPReservationSpec{CIDR: "10.0.0.10/32", Metro: "da"})
	require.NoError(t, err)
	pool := e.reserve(metalv1.IPReservationRequestInput{Type: "public_ipv4", Quantity: 4, Metro: ptr("da")})
	e.reserve(metalv1.IPReservationRequestInput{Type: "public_ipv4", Quantity: 1, Metro: ptr("am")})
	pending := e.reserve(metalv1.IPReservationRequestInput{Type: "public_ipv4", Quantity: 8, Metro: ptr("da")})

	_, _, err = e.createSession(d.GetId(), metalv1.BGPSESSIONINPUTADDRESSFAMILY_IPV4, true)
	require.NoError(t, err)
	_, _, err = e.createSession(d.GetId(), metalv1.BGPSESSIONINPUTADDRESSFAMILY_IPV6, false)
	require.NoError(t, err)

	neighbors := e.neighbors(d.GetId())
	require.Len(t, neighbors, 2)
	v4, v6 := neighbors[0], neighbors[1]
	routes := map[string]bool{}
	for _, r := range v4.RoutesIn {
		routes[r.GetRoute()] = r.GetExact()
	}
	assert.Equal(t, map[string]bool{"10.0.0.10/32": true, pool.GetAddress() + "/30": false}, routes,
		"the project's created Elastic IPs in the device's metro: not other metros, not pending ones")
	require.Len(t, v4.RoutesOut, 1)
	assert.Equal(t, "0.0.0.0/0", v4.RoutesOut[0].GetRoute())
	assert.True(t, v4.RoutesOut[0].GetExact())
	assert.False(t, v4.GetMd5Enabled())
	assert.Nil(t, v4.Md5Password)

	assert.Equal(t, int32(6), v6.GetAddressFamily())
	assert.Equal(t, d.IpAddresses[1].GetAddress(), v6.GetCustomerIp())
	assert.Empty(t, v6.RoutesOut)

	require.NoError(t, e.sim.ApproveIPReservation(pending.GetId()))
	assert.Len(t, e.neighbors(d.GetId())[0].RoutesIn, 3, "an approved reservation is announceable")
	_, err = e.client.IPAddressesApi.DeleteIPAddress(e.ctx, vip).Execute()
	require.NoError(t, err)
	assert.Len(t, e.neighbors(d.GetId())[0].RoutesIn, 2, "a released one is not")
}

func TestBGPSessionsVanishWithTheirDevice(t *testing.T) {
	e := newEnv(t)
	e.enableBGP(nil)
	d := e.createActive("node-1")
	session, _, err := e.createSession(d.GetId(), metalv1.BGPSESSIONINPUTADDRESSFAMILY_IPV4, false)
	require.NoError(t, err)
	require.NoError(t, e.sim.DeleteDeviceOutOfBand(d.GetId()))
	_, resp, err := e.client.BGPApi.FindBgpSessionById(e.ctx, session.GetId()).Execute()
	requireAPIError(t, resp, err, http.StatusNotFound, "")
	cfg, _, err := e.client.BGPApi.FindBgpConfigByProject(e.ctx, testProject).Execute()
	require.NoError(t, err)
	assert.Empty(t, cfg.Sessions)
}

func TestBGPOperationFaults(t *testing.T) {
	e := newEnv(t)
	e.enableBGP(nil)
	d := e.createActive("node-1")

	e.sim.InjectFault(Fault{Kind: FaultDropConnection, Operations: []string{OpCreateBgpSession}, AfterStore: true, Count: 1})
	_, resp, err := e.createSession(d.GetId(), metalv1.BGPSESSIONINPUTADDRESSFAMILY_IPV4, false)
	require.Error(t, err)
	assert.Nil(t, resp)
	_, resp, err = e.createSession(d.GetId(), metalv1.BGPSESSIONINPUTADDRESSFAMILY_IPV4, false)
	requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "already has session")

	for _, f := range []Fault{
		{Kind: FaultRateLimit, Operations: []string{OpGetBgpNeighborData}, Count: 1},
		{Kind: FaultServerError, Status: 502, Operations: []string{OpGetBgpNeighborData}, Count: 1},
		{Kind: FaultForbidden, Operations: []string{OpGetBgpNeighborData}, Count: 1},
	} {
		e.sim.InjectFault(f)
		_, resp, err := e.client.DevicesApi.GetBgpNeighborData(e.ctx, d.GetId()).Execute()
		require.Error(t, err, f.Kind)
		require.NotNil(t, resp)
		assert.GreaterOrEqual(t, resp.StatusCode, 400)
	}
	assert.Len(t, e.neighbors(d.GetId()), 1)
}
