package ownedpools

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// addShapedServer is addServer with a BMC of the shape opts give and the
// Inventory's annotations.
func addShapedServer(t *testing.T, env *framework.Env, name, mac string, lbls map[string]string, opts bmcsim.Options, notes map[string]string) *server {
	t.Helper()
	opts.Username, opts.Password = bmcUser, bmcPassword
	sim, srv := framework.RedfishBMC(t, opts)
	require.NoError(t, sim.SetPowerState("Off"))
	env.CreateBMCSecret(name, bmcUser, bmcPassword)
	inv := framework.RedfishInventory(name, srv)
	inv.Labels, inv.Annotations = lbls, notes
	inv.Spec.ManagementInterfaceMacAddress = mac
	inv.Spec.PrimaryDisk = "/dev/nvme0n1"
	inv.Spec.Events = seederv1alpha1.Events{Enabled: false, PollingInterval: "1h"}
	env.CreateInventory(inv)
	require.Eventually(t, func() bool {
		return env.Inventory(name).Status.Status == seederv1alpha1.InventoryNodeReady
	}, wait, tick, "Inventory %s never reached its BMC", name)
	return &server{name: name, bmc: sim}
}

// serverBooted waits for the Instance holding server to have asked its
// BMC for the network boot and powered it on.
func serverBooted(t *testing.T, env *framework.Env, pool, server string) equinixv1.Instance {
	t.Helper()
	var got equinixv1.Instance
	require.Eventually(t, func() bool {
		for _, inst := range instancesOf(t, env, pool) {
			if inst.Status.Server == server && inst.Status.InstallRequestedAt != nil {
				got = inst
				return true
			}
		}
		return false
	}, wait, tick, "server %s was never booted", server)
	return got
}

// networkBootEvent is the message of the Instance's NetworkBoot Event.
func networkBootEvent(t *testing.T, env *framework.Env, inst string) string {
	t.Helper()
	var msg string
	require.Eventually(t, func() bool {
		for _, e := range env.Events(inst) {
			if e.Reason == equinixv1.ReasonNetworkBoot {
				msg = e.Message
				return true
			}
		}
		return false
	}, wait, tick, "no NetworkBoot Event on %s", inst)
	return msg
}

// Each server boots with the firmware chosen for it, which its Instance
// shows: a server whose BMC reports Legacy boots Legacy when nothing is
// said; a Supermicro-shaped BMC, which sets a mode left out of the patch
// back to its default (Legacy), keeps its UEFI server UEFI; an HPE-shaped BMC, which
// refuses any patch naming the mode, takes the override without it for a
// server already in the mode its Inventory's annotation asks for; the
// pool's choice applies where the Inventory says nothing.
func TestBootFirmwareChosenPerServer(t *testing.T) {
	env := newEnv(t)
	rack := map[string]string{"rack": "uefi"}
	legacy := addShapedServer(t, env, "fw-own-legacy", mac(80), rack, bmcsim.Options{BootMode: "Legacy"}, nil)
	supermicro := addShapedServer(t, env, "fw-supermicro", mac(81), rack, bmcsim.Options{BootModeResetWhenOmitted: true}, nil)
	hpe := addShapedServer(t, env, "fw-hpe", mac(82), rack, bmcsim.Options{BootModeReadOnly: true},
		map[string]string{equinixv1.AnnotationBootFirmware: equinixv1.BootFirmwareUEFI})
	createPool(t, env, ownedPool("fw-own", 3, rack))

	for _, tc := range []struct {
		s        *server
		mode     string
		patches  int
		because  string
		firmware string
	}{
		{legacy, "Legacy", 1, "the server's own boot mode", equinixv1.BootFirmwareLegacy},
		{supermicro, "UEFI", 1, "the server's own boot mode", equinixv1.BootFirmwareUEFI},
		{hpe, "UEFI", 2, "the Inventory's annotation " + equinixv1.AnnotationBootFirmware, equinixv1.BootFirmwareUEFI},
	} {
		inst := serverBooted(t, env, "fw-own", tc.s.name)
		assert.Equal(t, tc.firmware, inst.Status.BootFirmware, tc.s.name)
		o := tc.s.bmc.BootOverride()
		assert.Equal(t, tc.mode, o.Mode, "%s: the mode the server boots in", tc.s.name)
		n, ts := tc.s.networkBoots()
		assert.Equal(t, 1, n, "%s: %+v", tc.s.name, ts)
		assert.Equal(t, tc.patches, count(tc.s.bmc.RequestLog(), "PATCH /redfish/v1/Systems/1"), tc.s.name)
		msg := networkBootEvent(t, env, inst.Name)
		assert.Contains(t, msg, "in "+tc.firmware+" mode ("+tc.because, tc.s.name)
	}

	// The pool's choice, for a server whose Inventory says nothing.
	pool := map[string]string{"rack": "pool-legacy"}
	own := addShapedServer(t, env, "fw-pool", mac(83), pool, bmcsim.Options{}, nil)
	p := ownedPool("fw-pool", 1, pool)
	p.Spec.Servers.BootFirmware = equinixv1.BootFirmwareLegacy
	createPool(t, env, p)
	inst := serverBooted(t, env, "fw-pool", own.name)
	assert.Equal(t, equinixv1.BootFirmwareLegacy, inst.Status.BootFirmware)
	assert.Equal(t, "Legacy", own.bmc.BootOverride().Mode, "a UEFI server told Legacy by its pool")
	assert.Contains(t, networkBootEvent(t, env, inst.Name), "in Legacy mode (the pool's spec.servers.bootFirmware)")
}

// An annotation that names no firmware is a Warning and a condition on the
// Instance, and nothing reaches the BMC; written right, the server boots.
func TestUnknownBootFirmwareSendsNothing(t *testing.T) {
	env := newEnv(t)
	rack := map[string]string{"rack": "fw-bad"}
	s := addShapedServer(t, env, "fw-bad", mac(84), rack, bmcsim.Options{},
		map[string]string{equinixv1.AnnotationBootFirmware: "bios"})
	createPool(t, env, ownedPool("fw-bad", 1, rack))
	var inst equinixv1.Instance
	require.Eventually(t, func() bool {
		insts := instancesOf(t, env, "fw-bad")
		if len(insts) != 1 {
			return false
		}
		inst = insts[0]
		c := framework.Condition(&inst, equinixv1.InstanceInstalling)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == equinixv1.ReasonBootFirmwareInvalid
	}, wait, tick, "the annotation was never refused")
	c := framework.Condition(&inst, equinixv1.InstanceInstalling)
	assert.Contains(t, c.Message, `annotation equinix.harvesterhci.io/boot-firmware is "bios"; write UEFI or Legacy`)
	require.True(t, env.EventRecorded(inst.Name, equinixv1.ReasonBootFirmwareInvalid))
	for _, e := range env.Events(inst.Name) {
		if e.Reason == equinixv1.ReasonBootFirmwareInvalid {
			assert.Equal(t, corev1.EventTypeWarning, e.Type)
		}
	}
	assert.Zero(t, count(s.bmc.RequestLog(), "PATCH /redfish/v1/Systems/1"), "no boot override")
	assert.Empty(t, s.bmc.Resets(), "no power command")

	require.Eventually(t, func() bool {
		inv := env.Inventory(s.name)
		inv.Annotations[equinixv1.AnnotationBootFirmware] = equinixv1.BootFirmwareUEFI
		_, err := env.Client.MetalV1alpha1().Inventories(ns).Update(env.Ctx, inv, metav1.UpdateOptions{})
		return err == nil
	}, wait, tick)
	booted := serverBooted(t, env, "fw-bad", s.name)
	assert.Equal(t, equinixv1.BootFirmwareUEFI, booted.Status.BootFirmware)
	assert.Equal(t, bmcsim.BootOverride{Target: bmcsim.BootNone, Enabled: bmcsim.BootDisabled, Mode: "UEFI"}, s.bmc.BootOverride(), "used by the start")
}

func count(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, s) {
			n++
		}
	}
	return n
}
