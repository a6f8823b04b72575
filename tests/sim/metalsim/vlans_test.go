package metalsim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVirtualNetworkLifecycle(t *testing.T) {
	e := newEnv(t)
	vlans := e.client.VLANsApi

	explicit := e.createVLAN("da", 1001)
	assert.Equal(t, int32(1001), explicit.GetVxlan())
	assert.Equal(t, "da", explicit.GetMetroCode())
	assert.Equal(t, "test", explicit.GetDescription())
	assert.Equal(t, "/metal/v1/virtual-networks/"+explicit.GetId(), explicit.GetHref())

	auto := e.createVLAN("da", 0)
	assert.Equal(t, int32(1000), auto.GetVxlan(), "the lowest free vxlan in 1000-1999")
	auto2 := e.createVLAN("da", 0)
	assert.Equal(t, int32(1002), auto2.GetVxlan())
	sameVXLANOtherMetro := e.createVLAN("am", 1001)
	assert.Equal(t, "am", sameVXLANOtherMetro.GetMetroCode())

	tagged, _, err := vlans.CreateVirtualNetwork(e.ctx, testProject).VirtualNetworkCreateInput(metalv1.VirtualNetworkCreateInput{
		Metro: ptr("da"), Vxlan: ptr(int32(3999)), Tags: []string{"cluster:x"},
	}).Execute()
	require.NoError(t, err)
	assert.Equal(t, []string{"cluster:x"}, tagged.Tags)

	t.Run("invalid requests", func(t *testing.T) {
		for name, in := range map[string]metalv1.VirtualNetworkCreateInput{
			"duplicate vxlan in metro": {Metro: ptr("da"), Vxlan: ptr(int32(1001))},
			"vxlan too low":            {Metro: ptr("da"), Vxlan: ptr(int32(1))},
			"vxlan too high":           {Metro: ptr("da"), Vxlan: ptr(int32(4000))},
			"unknown metro":            {Metro: ptr("zz")},
			"no metro":                 {Description: ptr("x")},
		} {
			t.Run(name, func(t *testing.T) {
				_, resp, err := vlans.CreateVirtualNetwork(e.ctx, testProject).VirtualNetworkCreateInput(in).Execute()
				requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "")
			})
		}
	})

	t.Run("list with metro filter", func(t *testing.T) {
		all, resp, err := vlans.FindVirtualNetworks(e.ctx, testProject).Execute()
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Len(t, all.VirtualNetworks, 5)
		am, _, err := vlans.FindVirtualNetworks(e.ctx, testProject).Metro("am").Execute()
		require.NoError(t, err)
		require.Len(t, am.VirtualNetworks, 1)
		assert.Equal(t, sameVXLANOtherMetro.GetId(), am.VirtualNetworks[0].GetId())
		other, _, err := e.other.VLANsApi.FindVirtualNetworks(e.ctx, otherProject).Execute()
		require.NoError(t, err)
		assert.Empty(t, other.VirtualNetworks)
	})

	t.Run("delete refused while assigned", func(t *testing.T) {
		d := e.createActive("node-1")
		n := netClient{env: e, deviceID: d.GetId()}
		n.assign("bond0", explicit.GetId())
		resp, err := vlans.DeleteVirtualNetwork(e.ctx, explicit.GetId()).Execute()
		requireAPIError(t, resp, err, http.StatusUnprocessableEntity, "unassign it first")
		n.unassign("bond0", explicit.GetId())
		resp, err = vlans.DeleteVirtualNetwork(e.ctx, explicit.GetId()).Execute()
		require.NoError(t, err)
		assert.Equal(t, http.StatusNoContent, resp.StatusCode)
		_, resp, err = vlans.GetVirtualNetwork(e.ctx, explicit.GetId()).Execute()
		requireAPIError(t, resp, err, http.StatusNotFound, "")
	})

	t.Run("another project's VLAN", func(t *testing.T) {
		_, resp, err := e.other.VLANsApi.GetVirtualNetwork(e.ctx, auto.GetId()).Execute()
		requireAPIError(t, resp, err, http.StatusForbidden, "not authorized")
	})
}

// The VLAN answers write their instances' hrefs without the SDK's model,
// which is slow at fleet size; the JSON must stay what the model encodes.
func TestVLANJSONIsTheModels(t *testing.T) {
	e := newEnv(t)
	v := e.createVLAN("da", 1001)
	empty := e.createVLAN("da", 1002) // a VLAN no device is on
	for i := range 3 {
		d := e.createActive(fmt.Sprintf("vlan-member-%d", i))
		_, _, err := e.client.PortsApi.AssignPort(e.ctx, e.port(d, "bond0").GetId()).
			PortAssignInput(metalv1.PortAssignInput{Vnid: v.Id}).Execute()
		require.NoError(t, err)
	}
	req, err := http.NewRequest(http.MethodGet, e.srv.URL+apiPrefix+"/projects/"+testProject+"/virtual-networks", nil)
	require.NoError(t, err)
	req.Header.Set("X-Auth-Token", testToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	list, err := io.ReadAll(resp.Body)
	require.NoError(t, err)

	e.sim.mu.Lock()
	defer e.sim.mu.Unlock()
	require.Equal(t, 3, e.sim.vlans[v.GetId()].devices.len())
	for _, vl := range e.sim.vlans {
		for _, in := range []includes{{}, {include: map[string]bool{"metro": true}}} {
			got, err := e.sim.appendVLANJSON(nil, vl, in)
			require.NoError(t, err)
			want, err := json.Marshal(e.sim.renderVLAN(vl, in))
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got))
		}
	}
	want, err := json.Marshal(metalv1.VirtualNetworkList{VirtualNetworks: []metalv1.VirtualNetwork{
		e.sim.renderVLAN(e.sim.vlans[v.GetId()], includes{}), e.sim.renderVLAN(e.sim.vlans[empty.GetId()], includes{}),
	}})
	require.NoError(t, err)
	assert.Equal(t, string(want), string(list), "the list as the SDK's model encodes it")
	assert.Equal(t, `a\u003cb`, string(appendJSONString(nil, "a<b")), "escaped as encoding/json does")
}
