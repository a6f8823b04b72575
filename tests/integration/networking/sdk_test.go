package networking

import (
	"net/http"
	"path"
	"sort"
	"testing"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// metalAPI is a plain SDK client on the simulator, independent of the
// addon's pkg/metal: what it reads is what a user of the Metal API would see.
func metalAPI(env *framework.Env) *metalv1.APIClient {
	cfg := metalv1.NewConfiguration()
	cfg.Servers = metalv1.ServerConfigurations{{URL: env.SimURL}}
	cfg.AddDefaultHeader("X-Auth-Token", framework.MetalToken)
	cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	return metalv1.NewAPIClient(cfg)
}

// portView is one port as the API reports it.
type portView struct {
	ID          string
	Bonded      bool
	NetworkType string
	VXLANs      []int
}

// deviceView is a device's ports and addresses as the API reports them.
type deviceView struct {
	Ports     map[string]portView
	Addresses []string
}

// readDevice reads the device with its ports, then every port on its own
// with its VLANs, resolving each VLAN's href to its VXLAN.
func readDevice(t *testing.T, env *framework.Env, id string) deviceView {
	t.Helper()
	api := metalAPI(env)
	dev, _, err := api.DevicesApi.FindDeviceById(env.Ctx, id).Include([]string{"network_ports"}).Execute()
	require.NoError(t, err)
	out := deviceView{Ports: map[string]portView{}}
	for _, ip := range dev.GetIpAddresses() {
		out.Addresses = append(out.Addresses, ip.GetAddress())
	}
	require.NotEmpty(t, dev.GetNetworkPorts(), "device %s has no network_ports", id)
	for _, p := range dev.GetNetworkPorts() {
		port, _, err := api.PortsApi.FindPortById(env.Ctx, p.GetId()).Include([]string{"virtual_networks"}).Execute()
		require.NoError(t, err)
		view := portView{ID: port.GetId(), NetworkType: string(port.GetNetworkType())}
		if port.Data != nil {
			view.Bonded = port.Data.GetBonded()
		}
		for _, vn := range port.GetVirtualNetworks() {
			view.VXLANs = append(view.VXLANs, resolveVXLAN(t, env, api, vn))
		}
		sort.Ints(view.VXLANs)
		out.Ports[port.GetName()] = view
	}
	return out
}

// resolveVXLAN follows a port's VLAN href, as clients do with path.Base, and
// checks it against the included object when there is one.
func resolveVXLAN(t *testing.T, env *framework.Env, api *metalv1.APIClient, vn metalv1.VirtualNetwork) int {
	t.Helper()
	require.NotEmpty(t, vn.GetHref(), "a port VLAN without href")
	full, _, err := api.VLANsApi.GetVirtualNetwork(env.Ctx, path.Base(vn.GetHref())).Execute()
	require.NoError(t, err)
	if vn.Vxlan != nil {
		require.Equal(t, vn.GetVxlan(), full.GetVxlan(), "href %s and the included VLAN disagree", vn.GetHref())
	}
	return int(full.GetVxlan())
}

// vlanView is a project VLAN as the API reports it.
type vlanView struct {
	ID          string
	Description string
	Tags        []string
}

// projectVLANs lists the project's VLANs in metro by VXLAN.
func projectVLANs(t *testing.T, env *framework.Env, metro string) map[int]vlanView {
	t.Helper()
	list, _, err := metalAPI(env).VLANsApi.FindVirtualNetworks(env.Ctx, framework.ProjectID).Metro(metro).Execute()
	require.NoError(t, err)
	out := map[int]vlanView{}
	for _, v := range list.GetVirtualNetworks() {
		out[int(v.GetVxlan())] = vlanView{ID: v.GetId(), Description: v.GetDescription(), Tags: v.GetTags()}
	}
	return out
}

// createVLAN creates a VLAN the way an operator would, outside the addon.
func createVLAN(t *testing.T, env *framework.Env, metro string, vxlan int32, description string) string {
	t.Helper()
	in := metalv1.VirtualNetworkCreateInput{Metro: metalv1.PtrString(metro), Vxlan: metalv1.PtrInt32(vxlan), Description: metalv1.PtrString(description)}
	v, _, err := metalAPI(env).VLANsApi.CreateVirtualNetwork(env.Ctx, framework.ProjectID).VirtualNetworkCreateInput(in).Execute()
	require.NoError(t, err)
	return v.GetId()
}
