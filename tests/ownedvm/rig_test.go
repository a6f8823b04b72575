package ownedvm

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/sim/qemubmc"
)

const (
	bmcUser     = "admin"
	bmcPassword = "Qemu-bmc-pw-never-shown-39"
	wait        = 30 * time.Second
	// bootWait bounds a machine's boot from its power-on to its installer
	// script: OVMF and iPXE emulated (TCG) on a shared, loaded runner.
	bootWait = 10 * time.Minute
	tick     = 100 * time.Millisecond

	// The machines' network is QEMU's user network: 10.0.2.2 its gateway,
	// 10.0.2.3 its name server, and the boot endpoint at 10.0.2.100, the
	// one address QEMU forwards out of it.
	guestEndpoint = "10.0.2.100:80"
	gateway       = "10.0.2.2"
	nameserver    = "10.0.2.3"
)

// requireRig finds QEMU, OVMF and the boot loaders, or skips the test
// (fails it under CI=true, where scripts/test installs them).
func requireRig(t *testing.T) string {
	t.Helper()
	missing := func(msg string) {
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if err := qemubmc.Available(); err != nil {
		missing(err.Error())
	}
	dir := os.Getenv("BOOT_LOADERS_DIR")
	if dir == "" {
		missing("BOOT_LOADERS_DIR is not set: scripts/test sets it to the folder scripts/boot-loaders fetches")
	}
	return dir
}

// rigEnv runs the controller with the owned pools and a boot endpoint
// that serves boot images, whose public URL is the address the machines
// reach it at; and the machines' way to it.
func rigEnv(t *testing.T) (*framework.Env, *qemubmc.BootNetwork) {
	t.Helper()
	loaders := requireRig(t)
	endpoint := framework.FreeAddr(t)
	env := framework.New(t, &shared, framework.Options{Mode: config.ModeSeeder, OwnedPools: true, Configure: func(c *config.Config) {
		c.BMCTimeout = 5 * time.Second
		c.SeederCheckInterval = 500 * time.Millisecond
		c.IPXEAddress, c.IPXEPublicURL, c.BootLoadersDir = endpoint, "http://"+strings.TrimSuffix(guestEndpoint, ":80"), loaders
	}})
	return env, startBootNetwork(t, endpoint)
}

// startBootNetwork is the machines' way to the controller's boot
// endpoint, which notes what each server fetched.
func startBootNetwork(t *testing.T, endpoint string) *qemubmc.BootNetwork {
	t.Helper()
	n, err := qemubmc.NewBootNetwork(endpoint)
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// hostURL is a URL the machines reach (the boot endpoint's guest
// address) as the test reaches it.
func hostURL(t *testing.T, n *qemubmc.BootNetwork, raw string) string {
	t.Helper()
	u, err := n.HostURL(raw, guestEndpoint)
	require.NoError(t, err)
	return u
}

// server is one server people own: a QEMU machine behind its BMC, and
// its Inventory.
type server struct {
	name, mac string
	bmc       *qemubmc.BMC
}

// addServer racks a switched-off machine with a BMC offering virtual
// media, registers its Inventory as a user does and waits for its BMC to
// be reached.
func addServer(t *testing.T, env *framework.Env, bootNet *qemubmc.BootNetwork, i int, lbls map[string]string) *server {
	t.Helper()
	s := &server{name: fmt.Sprintf("vm-%d", i), mac: fmt.Sprintf("52:54:00:39:0a:%02x", i)}
	hw := bmcsim.DefaultHardware()
	hw.UUID = fmt.Sprintf("39393939-0000-4000-8000-0000000000%02x", i)
	b, err := qemubmc.New(qemubmc.Options{
		BMC: bmcsim.Options{Username: bmcUser, Password: bmcPassword, Hardware: &hw, VirtualMedia: bmcsim.VirtualMediaOnSystem},
		MAC: s.mac, Dir: t.TempDir(),
		Guest: netip.MustParseAddrPort(guestEndpoint), Host: bootNet.Addr,
	})
	require.NoError(t, err)
	s.bmc = b
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range b.Lives() {
				t.Logf("%s, %s: QMP %v; serial console (end):\n%s", s.name, l.Dir, l.QMP, tail(l.Serial(), 2000))
			}
			t.Logf("%s: BMC commands %v; failures: %v", s.name, b.Commands(), b.Err())
		}
		_ = b.Close()
	})
	env.CreateBMCSecret(s.name, bmcUser, bmcPassword)
	inv := framework.RedfishInventory(s.name, b.Server)
	inv.Labels = lbls
	inv.Spec.ManagementInterfaceMacAddress = s.mac
	inv.Spec.PrimaryDisk = "/dev/vda"
	inv.Spec.Events = seederv1alpha1.Events{PollingInterval: "1h"}
	env.CreateInventory(inv)
	require.Eventually(t, func() bool { return env.Inventory(s.name).Status.Status == seederv1alpha1.InventoryNodeReady }, wait, tick,
		"Inventory %s never reached its BMC", s.name)
	return s
}

// commands counts what the server's BMC was asked to do.
type commands struct{ insert, eject, boot, power int }

func (s *server) commands() (commands, []string) {
	var c commands
	all := s.bmc.Commands()
	for _, r := range all {
		switch {
		case strings.Contains(r, "VirtualMedia.InsertMedia"):
			c.insert++
		case strings.Contains(r, "VirtualMedia.EjectMedia"):
			c.eject++
		case strings.HasPrefix(r, "PATCH /redfish/v1/Systems/"):
			c.boot++
		case strings.Contains(r, "ComputerSystem.Reset"):
			c.power++
		}
	}
	return c, all
}

// lastLife is the machine's current or last run.
func (s *server) lastLife(t *testing.T) qemubmc.Life {
	t.Helper()
	lives := s.bmc.Lives()
	require.NotEmpty(t, lives, "%s never ran", s.name)
	return lives[len(lives)-1]
}

func instancesOf(t *testing.T, env *framework.Env, pool string) []equinixv1.Instance {
	t.Helper()
	list, err := env.Client.EquinixV1().Instances().List(env.Ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{equinixv1.LabelPool: pool}).String()})
	require.NoError(t, err)
	return list.Items
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
