package kubevip

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// metadataAddress is an entry of the metadata's network.addresses.
type metadataAddress struct {
	Address       string `json:"address"`
	CIDR          int    `json:"cidr"`
	Gateway       string `json:"gateway"`
	Public        bool   `json:"public"`
	AddressFamily int    `json:"address_family"`
}

// With --bgp, the install configuration of the addon's servers routes
// Equinix Metal's BGP peers through the private gateway at every boot. The
// test takes the boot step from the configuration the server installed
// with and runs it, with the real sh, jq and ip(8), in a namespace laid out
// as the server's management network (mgmt-br with its public address and
// default route), against the simulator's metadata of that device: both
// peers are then routed through the private gateway, from the private
// address the routers require, and a second boot changes nothing.
func TestServersRouteTheBGPPeersThroughThePrivateGateway(t *testing.T) {
	requireNetns(t)
	for _, tool := range []string{"sh", "jq", "curl", "awk"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("this test runs %s, which is missing", tool)
			}
			t.Skipf("this test runs %s, which is missing", tool)
		}
	}
	env := framework.New(t, &shared, framework.Options{Configure: func(c *config.Config) { c.BGP = true }})
	pool := framework.SeedPoolWith(t, "routes", "")
	pool.Spec.Count = 1
	env.CreatePool(pool)
	env.WaitPoolReady("routes", 1, 2*time.Minute)
	device := env.Instances("routes")[0].Status.InstanceID
	result, ok := env.Agent.LastResult(device)
	require.True(t, ok)
	var content string
	for _, f := range result.Files {
		if f.Path == harvester.BGPPeerRoutesFile {
			content = f.Content
			assert.Equal(t, "0600", f.Permissions)
		}
	}
	require.NotEmpty(t, content, "the install configuration writes no %s", harvester.BGPPeerRoutesFile)
	var boot struct {
		Stages map[string][]struct{ Commands []string }
	}
	require.NoError(t, yaml.Unmarshal([]byte(content), &boot))
	require.Len(t, boot.Stages["network"], 1)
	require.Len(t, boot.Stages["network"][0].Commands, 1)
	script := boot.Stages["network"][0].Commands[0]

	// The device's addresses, as its metadata gives them.
	simRoot := strings.TrimSuffix(env.SimURL, "/metal/v1")
	req, err := http.NewRequestWithContext(env.Ctx, http.MethodGet, simRoot+"/metadata", nil)
	require.NoError(t, err)
	req.Header.Set(metalsim.DeviceIDHeader, device)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var md struct {
		Network struct{ Addresses []metadataAddress } `json:"network"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&md))
	var public, private metadataAddress
	for _, a := range md.Network.Addresses {
		switch {
		case a.AddressFamily == 4 && a.Public && public.Address == "":
			public = a
		case a.AddressFamily == 4 && !a.Public && private.Address == "":
			private = a
		}
	}
	require.NotEmpty(t, public.Address)
	require.NotEmpty(t, private.Address)

	ns := newNetns(t)
	mgmtBridge(t, ns, fmt.Sprintf("%s/%d", public.Address, public.CIDR), public.Gateway)
	// The metadata service is the simulator's: curl in the namespace
	// reaches it through a forwarder, naming the device as the real
	// service knows it by its source address.
	forwardIntoNetns(t, ns, "127.0.0.1:80", strings.TrimPrefix(simRoot, "http://"))
	curl, err := exec.LookPath("curl")
	require.NoError(t, err)
	stub := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(stub, "curl"), []byte(fmt.Sprintf(
		"#!/bin/sh\nexec %s -fsS -H '%s: %s' http://127.0.0.1:80/metadata\n", curl, metalsim.DeviceIDHeader, device)), 0o755))
	boots := func() {
		t.Helper()
		cmd := exec.Command("ip", "netns", "exec", ns, "sh", "-c", script)
		cmd.Env = []string{"PATH=" + stub + ":" + os.Getenv("PATH")}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "the boot step failed:\n%s", out)
	}
	boots()
	for _, peer := range harvester.BGPPeerIPs {
		out, err := exec.Command("ip", "-n", ns, "-4", "route", "get", peer).CombinedOutput()
		require.NoError(t, err, string(out))
		assert.Contains(t, string(out), fmt.Sprintf("%s via %s dev mgmt-br src %s", peer, private.Gateway, private.Address))
	}
	before, err := exec.Command("ip", "-n", ns, "-4", "route", "show", "table", "all").CombinedOutput()
	require.NoError(t, err)
	boots()
	after, err := exec.Command("ip", "-n", ns, "-4", "route", "show", "table", "all").CombinedOutput()
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "a second boot changes nothing")
	t.Logf("routes after boot:\n%s", after)
}
