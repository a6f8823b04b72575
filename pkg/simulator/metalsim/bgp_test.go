package metalsim

import (
	"net/http"
	"testing"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBGP(t *testing.T) {
	e := newEnv(t)
	bgp := e.client.BGPApi
	d := e.createActive("node-1")

	cfg, resp, err := bgp.FindBgpConfigByProject(e.ctx, testProject).Execute()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, cfg.GetId(), "no config yet, still 200")

	_, resp, err = e.client.DevicesApi.CreateBgpSession(e.ctx, d.GetId()).
		BGPSessionInput(metalv1.BGPSessionInput{AddressFamily: ptr(metalv1.BGPSESSIONINPUTADDRESSFAMILY_IPV4)}).Execute()
	requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "not enabled")

	resp, err = bgp.RequestBgpConfig(e.ctx, testProject).BgpConfigRequestInput(metalv1.BgpConfigRequestInput{
		Asn: 65000, DeploymentType: metalv1.BGPCONFIGREQUESTINPUTDEPLOYMENTTYPE_LOCAL, Md5: ptr("Secret12345"),
	}).Execute()
	require.NoError(t, err)
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)

	resp, err = bgp.RequestBgpConfig(e.ctx, testProject).BgpConfigRequestInput(metalv1.BgpConfigRequestInput{
		Asn: 65000, DeploymentType: metalv1.BGPCONFIGREQUESTINPUTDEPLOYMENTTYPE_LOCAL,
	}).Execute()
	requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "already enabled")

	cfg, _, err = bgp.FindBgpConfigByProject(e.ctx, testProject).Execute()
	require.NoError(t, err)
	assert.NotEmpty(t, cfg.GetId())
	assert.Equal(t, metalv1.BGPCONFIGSTATUS_ENABLED, cfg.GetStatus())
	assert.Equal(t, int64(65000), cfg.GetAsn())

	session, resp, err := e.client.DevicesApi.CreateBgpSession(e.ctx, d.GetId()).
		BGPSessionInput(metalv1.BGPSessionInput{AddressFamily: ptr(metalv1.BGPSESSIONINPUTADDRESSFAMILY_IPV4)}).Execute()
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, metalv1.BGPSESSIONADDRESSFAMILY_IPV4, session.GetAddressFamily())

	_, resp, err = e.client.DevicesApi.CreateBgpSession(e.ctx, d.GetId()).
		BGPSessionInput(metalv1.BGPSessionInput{AddressFamily: ptr(metalv1.BGPSESSIONINPUTADDRESSFAMILY_IPV4)}).Execute()
	requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "already has session")

	sessions, _, err := e.client.DevicesApi.FindBgpSessions(e.ctx, d.GetId()).Execute()
	require.NoError(t, err)
	assert.Len(t, sessions.BgpSessions, 1)

	neighbors, resp, err := e.client.DevicesApi.GetBgpNeighborData(e.ctx, d.GetId()).Execute()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	require.Len(t, neighbors.BgpNeighbors, 1)
	n := neighbors.BgpNeighbors[0]
	assert.Equal(t, int32(65000), n.GetCustomerAs())
	assert.Equal(t, int32(65530), n.GetPeerAs())
	assert.Equal(t, []string{"169.254.255.1", "169.254.255.2"}, n.PeerIps)
	assert.Equal(t, d.IpAddresses[2].GetAddress(), n.GetCustomerIp(), "the private IPv4 peers")
	assert.Equal(t, "Secret12345", n.GetMd5Password())
	assert.True(t, n.GetMultihop())

	got, _, err := bgp.FindBgpSessionById(e.ctx, session.GetId()).Execute()
	require.NoError(t, err)
	assert.Equal(t, session.GetId(), got.GetId())
	resp, err = bgp.DeleteBgpSession(e.ctx, session.GetId()).Execute()
	require.NoError(t, err)
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
}
