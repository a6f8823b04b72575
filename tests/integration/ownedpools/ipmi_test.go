package ownedpools

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/ownedfleet"
)

// IPMI requests of an owned server's life, as ipmi_sim traces them
// ("NetFn/command data", hex).
const (
	// ipmiPassword fits IPMI's 20 bytes.
	ipmiPassword = "Ipmi-pw-never-shown"
	// Set System Boot Options, parameter 5 (the boot flags): valid, for
	// the next boot only, UEFI (the EFI bit: an IPMI BMC cannot report the
	// server's mode, and UEFI is what servers boot today); force PXE.
	ipmiBootOncePXE = "00/08 05 a0 04 00 00 00"
	ipmiPowerUp     = "00/02 01"
	ipmiPowerDown   = "00/02 00"
)

// A pool of two servers whose BMCs speak IPMI (OpenIPMI's ipmi_sim) grows
// and shrinks as one of Redfish servers: each server is claimed, gets one
// Set System Boot Options of the boot flags (PXE, next boot only) and one
// Chassis Control power up and nothing else that changes the BMC, PXE-boots
// into the controller's boot endpoint, installs and joins; scaled to 0,
// each gets one power down and is free again: no claim, its Node deleted,
// its Inventory without a node. No BMC ever has two sessions open at once.
// Without ipmi_sim the test is skipped, and fails under CI=true.
func TestIPMIServersJoinAndLeaveWithOneCommandEach(t *testing.T) {
	env, fleet, _ := fleetEnv(t)
	bmcs := map[string]*ownedfleet.IPMI{}
	for i := 1; i <= 2; i++ {
		spec := ownedfleet.Spec{Name: fmt.Sprintf("rack-i-%d", i), MAC: mac(120 + i),
			UUID: fmt.Sprintf("4c4c4544-0029-1010-8000-b2c04f0001%02d", 20+i), Disk: "/dev/nvme0n1"}
		b := fleet.RequireIPMI(t, spec, bmcUser, ipmiPassword)
		bmcs[spec.Name] = b
		registerInventory(t, env, spec, ipmiPassword, framework.IPMIInventory(spec.Name, b.Endpoint.Host, b.Endpoint.Port),
			map[string]string{"rack": "i"})
	}

	createPool(t, env, ownedPool("rack-i", 2, map[string]string{"rack": "i"}))
	insts := map[string]equinixv1.Instance{}
	require.Eventually(t, func() bool {
		clear(insts)
		for _, inst := range instancesOf(t, env, "rack-i") {
			if inst.Status.Status == equinixv1.PhaseManaged {
				insts[inst.Status.Server] = inst
			}
		}
		return len(insts) == 2
	}, wait, tick, "the servers never installed and joined: %+v", fleet.Results())
	for name, b := range bmcs {
		inst, ok := insts[name]
		require.True(t, ok, "no Instance holds %s", name)
		assert.Equal(t, name, inst.Status.NodeName, "the server joins under its Inventory's name")
		assert.Equal(t, inst.Name, env.Inventory(name).Labels[equinixv1.LabelClaimedBy])
		res := bootResult(t, fleet, name)
		assert.True(t, res.OK, "%+v", res)
		assert.Len(t, res.Requests, 2, "the chain URL and the configuration: %v", res.Requests)
		assertCommands(t, b, name, ipmiBootOncePXE, ipmiPowerUp)
		assert.Equal(t, equinixv1.BootFirmwareUEFI, inst.Status.BootFirmware, "the firmware the BMC was told")
	}
	assert.Len(t, fleet.Results(), 2, "one network boot per server")

	scale(t, env, "rack-i", 0)
	require.Eventually(t, func() bool { return len(instancesOf(t, env, "rack-i")) == 0 }, wait, tick,
		"the Instances were never released")
	for name, b := range bmcs {
		require.Eventually(t, func() bool {
			return inventoryCondition(t, env, name, equinixv1.BMCNodeFound, metav1.ConditionFalse, equinixv1.ReasonServerWithoutNode)
		}, wait, tick, "%s's Inventory never went back to no node: %+v", name, env.Inventory(name).Status.Conditions)
		inv := env.Inventory(name)
		assert.NotContains(t, inv.Labels, equinixv1.LabelClaimedBy)
		assert.NotContains(t, inv.Annotations, equinixv1.AnnotationClaimUID)
		_, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, name, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "%s's Node is deleted: %v", name, err)
		on, err := b.Sim.PowerOn()
		require.NoError(t, err)
		assert.False(t, on, "%s is switched off", name)
		assertCommands(t, b, name, ipmiBootOncePXE, ipmiPowerUp, ipmiPowerDown)
		assert.Equal(t, 1, b.Relay.MostSessions(), "%s's BMC had sessions open at once: %+v", name, b.Relay.Sessions())
	}
	assert.Empty(t, fleet.NodeNames(), "no server's kubelet runs")
	env.AssertAbsent(ipmiPassword)
}

// assertCommands waits for the BMC's trace to show as many requests that
// are no reads as want has (ipmi_sim's trace is read as it prints it),
// then compares them, in order.
func assertCommands(t *testing.T, b *ownedfleet.IPMI, name string, want ...string) {
	t.Helper()
	assert.Eventually(t, func() bool { return len(b.Commands(0)) >= len(want) }, wait, tick)
	assert.Equal(t, want, b.Commands(0), "what %s's BMC was told", name)
}
