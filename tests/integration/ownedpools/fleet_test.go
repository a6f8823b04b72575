package ownedpools

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/joinagent"
	"github.com/harvester/harvester-equinix-addon/tests/sim/ownedfleet"
)

// A simulated server (ownedfleet) PXE-boots into the controller's own boot
// endpoint when the pool powers it on, installs with the configuration it
// is served, and joins; the pool then releases it, powered off and free.
func TestOwnedServerInstallsThroughTheBootEndpointAndIsReleased(t *testing.T) {
	env, fleet, addr := fleetEnv(t)
	spec := ownedfleet.Spec{Name: "rack-f-1", MAC: mac(40), UUID: "4c4c4544-0029-1010-8000-b2c04f000040", Disk: "/dev/nvme0n1"}
	rf, err := fleet.AddRedfish(spec, bmcUser, bmcPassword, bmcsim.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rf.Close() })
	registerInventory(t, env, spec, bmcPassword, framework.RedfishInventory(spec.Name, rf.Server), map[string]string{"rack": "f"})

	createPool(t, env, ownedPool("rack-f", 1, map[string]string{"rack": "f"}))
	var inst equinixv1.Instance
	require.Eventually(t, func() bool {
		insts := instancesOf(t, env, "rack-f")
		if len(insts) != 1 {
			return false
		}
		inst = insts[0]
		return inst.Status.Status == equinixv1.PhaseManaged
	}, wait, tick, "the server never installed and joined: %+v", fleet.Results())
	assert.Equal(t, spec.Name, inst.Status.Server)
	// The server joined under its Inventory's name, labelled with its
	// Instance's: the name is what the served configuration set.
	assert.Equal(t, spec.Name, inst.Status.NodeName)
	node, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, spec.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, inst.Name, node.Labels[equinixv1.LabelInstance])
	assert.Equal(t, spec.UUID, inst.Status.SystemUUID)
	res := bootResult(t, fleet, spec.Name)
	assert.True(t, res.OK, "%+v", res)
	assert.Equal(t, "/dev/nvme0n1", res.Device)

	// After the join, the endpoint serves that MAC nothing.
	resp, err := http.Get(fmt.Sprintf("http://%s/boot/ipxe?mac=%s&uuid=%s", addr, spec.MAC, spec.UUID))
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	scale(t, env, "rack-f", 0)
	require.Eventually(t, func() bool { return len(instancesOf(t, env, "rack-f")) == 0 }, wait, tick)
	assert.Equal(t, "Off", rf.BMC.PowerState())
	inv := env.Inventory(spec.Name)
	assert.NotContains(t, inv.Labels, equinixv1.LabelClaimedBy)
	_, err = env.Kube.CoreV1().Nodes().Get(env.Ctx, spec.Name, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the Node is deleted: %v", err)
}

// fleetEnv runs the hardware mode with the owned pools and the boot
// endpoint on a loopback address, and a fleet of simulated servers that
// PXE-boot into it; it returns the endpoint's address too.
func fleetEnv(t *testing.T) (*framework.Env, *ownedfleet.Fleet, string) {
	t.Helper()
	// The simulated servers must know the boot endpoint before it starts.
	addr := framework.FreeAddr(t)
	loaders := bootLoaders(t)
	opts := hardwareOpts()
	opts.Configure = func(c *config.Config) {
		configure(c)
		// The loaders, as the addon's image ships them: a BMC that
		// offers virtual media is booted from the claim's image.
		c.IPXEAddress, c.IPXEPublicURL, c.BootLoadersDir = addr, "http://"+addr, loaders
	}
	env := framework.New(t, &shared, opts)
	fleet := ownedfleet.New(ownedfleet.Options{Kube: env.Kube,
		Expect:  joinagent.Expect{ServerURL: "https://" + framework.VIP + ":443", Token: framework.JoinToken},
		Version: framework.HarvesterVersion, Endpoint: "http://" + addr,
		InstallTime: 200 * time.Millisecond, HeartbeatInterval: time.Second})
	fleet.Start(env.Ctx)
	return env, fleet, addr
}

// registerInventory creates inv, the Inventory of a fleet server, with its
// MAC, disk and labels, and its BMC Secret (bmcUser and password), and
// waits for its BMC to be reached.
func registerInventory(t *testing.T, env *framework.Env, spec ownedfleet.Spec, password string, inv *seederv1alpha1.Inventory, lbls map[string]string) {
	t.Helper()
	env.CreateBMCSecret(spec.Name, bmcUser, password)
	inv.Labels = lbls
	inv.Spec.ManagementInterfaceMacAddress = spec.MAC
	inv.Spec.PrimaryDisk = spec.Disk
	inv.Spec.Events = seederv1alpha1.Events{PollingInterval: "1h"}
	env.CreateInventory(inv)
	require.Eventually(t, func() bool {
		return env.Inventory(spec.Name).Status.Status == seederv1alpha1.InventoryNodeReady
	}, wait, tick, "Inventory %s never reached its BMC", spec.Name)
}

// bootResult waits for the fleet's record of a server's network boot: a
// simulated server records it once its Node is Ready, which the
// controller may act on first.
func bootResult(t *testing.T, fleet *ownedfleet.Fleet, name string) ownedfleet.Result {
	t.Helper()
	var res ownedfleet.Result
	require.Eventually(t, func() bool {
		var ok bool
		res, ok = fleet.LastResult(name)
		return ok
	}, wait, tick, "%s never booted from the network", name)
	return res
}
