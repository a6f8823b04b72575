package apivalidation

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
)

// ownedPool is a pool of servers people own, as docs/owned-servers.md shows it.
const ownedPool = `apiVersion: equinix.harvesterhci.io/v1
kind: InstancePool
metadata:
  name: rack-a
spec:
  count: 2
  servers:
    selector:
      matchLabels:
        rack: a
  managementBondingOptions:
    mode: active-backup
`

func TestOwnedPoolAcceptedWithoutMetalFields(t *testing.T) {
	ctx, client := setup(t)
	pool := parsePool(t, ownedPool)
	created, err := client.EquinixV1().InstancePools().Create(ctx, pool, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.EquinixV1().InstancePools().Delete(ctx, created.Name, metav1.DeleteOptions{}) })
	require.True(t, created.Spec.Owned())
	assert.Equal(t, map[string]string{"rack": "a"}, created.Spec.Servers.Selector.MatchLabels)
	assert.Empty(t, created.Spec.Plan)
	assert.Empty(t, created.Spec.Metro)

	// Its Instance copies the template, and keeps the selector for life.
	inst := &equinixv1.Instance{ObjectMeta: metav1.ObjectMeta{Name: "rack-a-abcdefgh"},
		Spec: equinixv1.InstanceSpec{PoolName: pool.Name, InstanceTemplate: created.Spec.InstanceTemplate}}
	ci, err := client.EquinixV1().Instances().Create(ctx, inst, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.EquinixV1().Instances().Delete(ctx, ci.Name, metav1.DeleteOptions{}) })
	ci.Spec.Servers = nil
	_, err = client.EquinixV1().Instances().Update(ctx, ci, metav1.UpdateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "servers is fixed for the life of a server")
}

func TestMetalPoolNeedsPlanAndMetro(t *testing.T) {
	ctx, _ := setup(t)
	err := createRaw(ctx, t, `apiVersion: equinix.harvesterhci.io/v1
kind: InstancePool
metadata:
  name: no-plan
spec:
  count: 1
  metro: SG
`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.plan: Invalid value: an Equinix Metal pool needs a plan; to use servers you own, set servers instead")
}

// A pool that mixes the two providers is refused, naming exactly the Metal
// fields that were set; Metal's defaults written out by hand are not named.
func TestMixedProviderPoolRefusedNamingTheFields(t *testing.T) {
	ctx, _ := setup(t)
	for name, tc := range map[string]struct {
		extra string
		want  string
	}{
		"plan and metro": {extra: "  plan: c3.small.x86\n  metro: SG\n",
			want: "the Equinix Metal fields plan, metro cannot be set with it"},
		"network type": {extra: "  networkingConfiguration:\n    type: hybrid\n",
			want: "the Equinix Metal fields networkingConfiguration cannot be set with it"},
		"billing and spot": {extra: "  billingCycle: daily\n  spot:\n    maxPrice: \"0.5\"\n",
			want: "the Equinix Metal fields spot, billingCycle cannot be set with it"},
		"ports": {extra: "  managementInterface: [eth0, eth1]\n  credentialsSecret:\n    name: other\n",
			want: "the Equinix Metal fields credentialsSecret, managementInterface cannot be set with it"},
		"reservations": {extra: "  hardwareReservationIDs: [next-available]\n",
			want: "spec.hardwareReservationIDs: Invalid value: servers chooses servers you own, so the Equinix Metal field hardwareReservationIDs cannot be set with it"},
	} {
		t.Run(name, func(t *testing.T) {
			err := createRaw(ctx, t, ownedPool+tc.extra)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	t.Run("defaults written out", func(t *testing.T) {
		err := createRaw(ctx, t, ownedPool+"  billingCycle: hourly\n  managementInterface: [eth0]\n  networkingConfiguration:\n    type: layer3\n")
		require.NoError(t, err)
	})
}

// A pool's boot firmware is UEFI or Legacy, in those words; unset is
// accepted and stays unset (a default would roll out every existing pool).
func TestOwnedPoolBootFirmwareValidated(t *testing.T) {
	ctx, client := setup(t)
	withFirmware := func(fw string) string {
		return strings.Replace(ownedPool, "  servers:\n", "  servers:\n    bootFirmware: "+fw+"\n", 1)
	}
	for _, fw := range []string{"UEFI", "Legacy"} {
		require.NoError(t, createRaw(ctx, t, withFirmware(fw)), fw)
	}
	for _, fw := range []string{"uefi", "BIOS", `""`} {
		err := createRaw(ctx, t, withFirmware(fw))
		require.Error(t, err, fw)
		assert.Contains(t, err.Error(), "spec.servers.bootFirmware: Unsupported value", fw)
	}
	created, err := client.EquinixV1().InstancePools().Create(ctx, parsePool(t, ownedPool), metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.EquinixV1().InstancePools().Delete(ctx, created.Name, metav1.DeleteOptions{}) })
	assert.Empty(t, created.Spec.Servers.BootFirmware)
}

// A pool on a network without DHCP names its AddressPool with the IPv4
// name servers the installed node needs (the installer refuses a static
// address without one); name servers alone mean nothing with DHCP.
func TestOwnedPoolAddressPoolValidated(t *testing.T) {
	ctx, _ := setup(t)
	with := func(fields string) string {
		return strings.Replace(ownedPool, "  servers:\n", "  servers:\n"+fields, 1)
	}
	require.NoError(t, createRaw(ctx, t, with("    addressPool: rack-a-addresses\n    nameservers: [10.0.0.2, 192.168.255.254]\n")))
	for fields, want := range map[string]string{
		"    addressPool: rack-a\n":                                                        "a static management address needs nameservers",
		"    nameservers: [10.0.0.2]\n":                                                    "nameservers go with addressPool",
		"    addressPool: rack-a\n    nameservers: []\n":                                   "spec.servers.nameservers",
		"    addressPool: rack-a\n    nameservers: [dns.example.com]\n":                    "spec.servers.nameservers[0]: Invalid value",
		"    addressPool: rack-a\n    nameservers: [10.0.0.256]\n":                         "spec.servers.nameservers[0]: Invalid value",
		"    addressPool: rack-a\n    nameservers: [\"fd00::53\"]\n":                       "spec.servers.nameservers[0]: Invalid value",
		"    addressPool: rack-a\n    nameservers: [1.1.1.1, 2.2.2.2, 3.3.3.3, 4.4.4.4]\n": "spec.servers.nameservers: Too many",
		"    addressPool: Rack_A\n    nameservers: [10.0.0.2]\n":                           "spec.servers.addressPool: Invalid value",
	} {
		err := createRaw(ctx, t, with(fields))
		require.Error(t, err, fields)
		assert.Contains(t, err.Error(), want, fields)
	}
}
