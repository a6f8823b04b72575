package apivalidation

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/generated/clientset/versioned"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

var shared cluster.Shared

func TestMain(m *testing.M) {
	os.Exit(cluster.RunMain(m, cluster.Options{}, &shared))
}

// seedSample is the seed's sample InstancePool (examples/instancepool.yaml), byte for byte.
const seedSample = framework.SeedSample

func setup(t *testing.T) (context.Context, versioned.Interface) {
	c := shared.Require(t)
	ctx := context.Background()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	require.NoError(t, cluster.InstallCRDs(ctx, c.RESTConfig, cluster.AddonCRDDir(root)))
	client, err := versioned.NewForConfig(c.RESTConfig)
	require.NoError(t, err)
	return ctx, client
}

func parsePool(t *testing.T, doc string) *equinixv1.InstancePool {
	t.Helper()
	pool := &equinixv1.InstancePool{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), pool))
	return pool
}

func TestSeedSampleAcceptedUnchanged(t *testing.T) {
	ctx, client := setup(t)
	pool := parsePool(t, seedSample)
	created, err := client.EquinixV1().InstancePools().Create(ctx, pool, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.EquinixV1().InstancePools().Delete(ctx, created.Name, metav1.DeleteOptions{}) })

	assert.Equal(t, int32(1), created.Spec.Count)
	assert.Equal(t, "SG", created.Spec.Metro)
	assert.Equal(t, "hybrid", created.Spec.NetworkingConfiguration.Type)
	assert.Equal(t, []string{"1000", "1001"}, created.Spec.NetworkingConfiguration.InterfaceConfiguration[0].VLANIDs)
	assert.Equal(t, "5m0s", created.Spec.NodeCleanupWaitInterval.Duration.String())
	// Defaults an operator can rely on.
	assert.Equal(t, equinixv1.BootModeReinstall, created.Spec.BootMode)
	assert.Equal(t, "/dev/sda", created.Spec.InstallDevice)
	assert.Equal(t, int32(1), created.Spec.Remediation.MaxInFlight)
	assert.Equal(t, "40%", created.Spec.Remediation.MaxUnhealthy.String())
	assert.Equal(t, "45m0s", created.Spec.Remediation.StartupTimeout.Duration.String())
}

// The networking guide's samples (docs/networking.md), each under its own pool.
func TestSeedNetworkingSamplesAccepted(t *testing.T) {
	ctx, client := setup(t)
	samples := map[string]string{
		"hybrid-bonded":     framework.SeedHybridBonded,
		"layer2-bonded":     framework.SeedLayer2Bonded,
		"layer2-individual": framework.SeedLayer2Individual,
		"layer3":            "  networkingConfiguration:\n    type: layer3\n",
	}
	for name, networking := range samples {
		t.Run(name, func(t *testing.T) {
			pool := framework.SeedPoolWith(t, "seed-"+name, networking)
			_, err := client.EquinixV1().InstancePools().Create(ctx, pool, metav1.CreateOptions{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = client.EquinixV1().InstancePools().Delete(ctx, pool.Name, metav1.DeleteOptions{}) })
		})
	}
}

func TestBadSpecsRejectedNamingTheField(t *testing.T) {
	ctx, client := setup(t)
	cases := []struct {
		name   string
		mutate func(p *equinixv1.InstancePool)
		// every string must appear in the apiserver's answer
		want []string
	}{
		{"misspelled network type", func(p *equinixv1.InstancePool) { p.Spec.NetworkingConfiguration.Type = "hybird" },
			[]string{"spec.networkingConfiguration.type", `Unsupported value: "hybird"`}},
		{"negative count", func(p *equinixv1.InstancePool) { p.Spec.Count = -1 },
			[]string{"spec.count", "greater than or equal to 0"}},
		{"non-numeric VLAN", func(p *equinixv1.InstancePool) {
			p.Spec.NetworkingConfiguration.InterfaceConfiguration[0].VLANIDs = []string{"abc"}
		}, []string{"spec.networkingConfiguration.interfaceConfiguration[0].vlanIDS[0]", "VLAN (VXLAN) ID from 2 to 3999"}},
		{"VLAN above 3999", func(p *equinixv1.InstancePool) {
			p.Spec.NetworkingConfiguration.InterfaceConfiguration[0].VLANIDs = []string{"4000"}
		}, []string{"spec.networkingConfiguration.interfaceConfiguration[0].vlanIDS[0]", "from 2 to 3999"}},
		{"VLAN below 2", func(p *equinixv1.InstancePool) {
			p.Spec.NetworkingConfiguration.InterfaceConfiguration[0].VLANIDs = []string{"1"}
		}, []string{"spec.networkingConfiguration.interfaceConfiguration[0].vlanIDS[0]", "from 2 to 3999"}},
		{"unparsable nodeCleanupWaitInterval", func(p *equinixv1.InstancePool) {
			p.Spec.NodeCleanupWaitInterval = nil
		}, nil}, // replaced below with raw YAML, since a Duration cannot hold bad text
		{"too short nodeCleanupWaitInterval", func(p *equinixv1.InstancePool) {
			p.Spec.NodeCleanupWaitInterval = &metav1.Duration{Duration: 10e9}
		}, []string{"spec.nodeCleanupWaitInterval", "at least 1m"}},
		{"empty plan", func(p *equinixv1.InstancePool) { p.Spec.Plan = "" },
			[]string{"spec.plan"}},
		{"empty metro", func(p *equinixv1.InstancePool) { p.Spec.Metro = "" },
			[]string{"spec.metro"}},
		{"unknown billing cycle", func(p *equinixv1.InstancePool) { p.Spec.BillingCycle = "weekly" },
			[]string{"spec.billingCycle", `Unsupported value: "weekly"`}},
		{"hybrid VLANs on a bonded port", func(p *equinixv1.InstancePool) {
			p.Spec.NetworkingConfiguration.InterfaceConfiguration[0].Name = "eth0"
		}, []string{"spec.networkingConfiguration.interfaceConfiguration", "only eth1 (and eth3"}},
		{"hybrid management on the VLAN port", func(p *equinixv1.InstancePool) {
			p.Spec.ManagementInterface = []string{"eth1"}
		}, []string{"spec.managementInterface", "cannot carry the Harvester management network"}},
		{"layer3 with VLANs", func(p *equinixv1.InstancePool) { p.Spec.NetworkingConfiguration.Type = equinixv1.NetworkTypeLayer3 },
			[]string{"spec.networkingConfiguration.interfaceConfiguration", "layer3 keeps every port bonded"}},
		{"hybrid-bonded VLANs on a physical port", func(p *equinixv1.InstancePool) {
			p.Spec.NetworkingConfiguration.Type = equinixv1.NetworkTypeHybridBonded
		}, []string{"spec.networkingConfiguration.interfaceConfiguration", "VLANs attach to the bond"}},
		{"layer2-individual VLANs on the bond", func(p *equinixv1.InstancePool) {
			p.Spec.NetworkingConfiguration.Type = equinixv1.NetworkTypeLayer2Individual
			p.Spec.NetworkingConfiguration.InterfaceConfiguration[0].Name = "bond0"
		}, []string{"spec.networkingConfiguration.interfaceConfiguration", "only physical ports"}},
		{"layer2-bonded without a management VLAN", func(p *equinixv1.InstancePool) {
			p.Spec.NetworkingConfiguration.Type = equinixv1.NetworkTypeLayer2Bonded
			p.Spec.NetworkingConfiguration.InterfaceConfiguration = nil
		}, []string{"spec.networkingConfiguration.interfaceConfiguration", "list bond0 with at least one VLAN"}},
		{"layer2-individual management port without VLAN", func(p *equinixv1.InstancePool) {
			p.Spec.NetworkingConfiguration.Type = equinixv1.NetworkTypeLayer2Individual
		}, []string{"spec.networkingConfiguration.interfaceConfiguration", "each managementInterface must be listed"}},
		{"management VLAN not on bond0", func(p *equinixv1.InstancePool) {
			p.Spec.NetworkingConfiguration.Type = equinixv1.NetworkTypeLayer2Bonded
			p.Spec.NetworkingConfiguration.InterfaceConfiguration[0].Name = "bond0"
			p.Spec.NetworkingConfiguration.ManagementVLAN = "1002"
		}, []string{"spec.networkingConfiguration.managementVLAN", "one of the VLANs listed for bond0"}},
		{"management VLAN outside layer 2", func(p *equinixv1.InstancePool) {
			p.Spec.NetworkingConfiguration.ManagementVLAN = "1000"
		}, []string{"spec.networkingConfiguration.managementVLAN", "applies only to layer2"}},
		{"interface name that cannot exist", func(p *equinixv1.InstancePool) {
			p.Spec.NetworkingConfiguration.InterfaceConfiguration[0].Name = "wlan0"
		}, []string{"spec.networkingConfiguration.interfaceConfiguration[0].name"}},
		{"unknown bond mode", func(p *equinixv1.InstancePool) { p.Spec.ManagementBondingOptions["mode"] = "fastest" },
			[]string{"spec.managementBondingOptions", "mode must be one of"}},
		{"reserved tag", func(p *equinixv1.InstancePool) { p.Spec.Tags = []string{"equinix.harvesterhci.io/cluster:x"} },
			[]string{"spec.tags", "reserved for the addon"}},
		{"single-boot with layer-2 management", func(p *equinixv1.InstancePool) {
			p.Spec.BootMode = equinixv1.BootModeSingleBoot
			p.Spec.NetworkingConfiguration.Type = equinixv1.NetworkTypeLayer2Bonded
			p.Spec.NetworkingConfiguration.InterfaceConfiguration[0].Name = "bond0"
		}, []string{"spec.bootMode", "use bootMode reinstall"}},
		{"pool name too long for hostnames", func(p *equinixv1.InstancePool) {
			p.Name = strings.Repeat("p", 55)
		}, []string{"at most 54 characters"}},
		{"master is not a release", func(p *equinixv1.InstancePool) { p.Spec.HarvesterVersion = "master" },
			[]string{"spec.harvesterVersion"}},
	}
	for i, tc := range cases {
		if tc.want == nil {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			pool := parsePool(t, seedSample)
			pool.Name = fmt.Sprintf("bad-%d", i)
			tc.mutate(pool)
			_, err := client.EquinixV1().InstancePools().Create(ctx, pool, metav1.CreateOptions{})
			require.Error(t, err, "the apiserver accepted a bad spec")
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}

	t.Run("unparsable nodeCleanupWaitInterval", func(t *testing.T) {
		doc := strings.Replace(seedSample, "nodeCleanupWaitInterval: 5m", `nodeCleanupWaitInterval: "5 minutes"`, 1)
		doc = strings.Replace(doc, "harvester-pxe-worker", "bad-interval", 1)
		err := createRaw(ctx, t, doc)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "spec.nodeCleanupWaitInterval")
	})
	t.Run("VLAN written as a number", func(t *testing.T) {
		doc := strings.Replace(seedSample, `- "1000"`, `- 1000`, 1)
		doc = strings.Replace(doc, "harvester-pxe-worker", "bad-vlan-type", 1)
		err := createRaw(ctx, t, doc)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "spec.networkingConfiguration.interfaceConfiguration[0].vlanIDS[0]")
	})
}

func TestInstanceServerShapeIsImmutable(t *testing.T) {
	ctx, client := setup(t)
	pool := parsePool(t, seedSample)
	inst := &equinixv1.Instance{
		ObjectMeta: metav1.ObjectMeta{Name: "immutable-abcdefgh"},
		Spec:       equinixv1.InstanceSpec{PoolName: pool.Name, InstanceTemplate: pool.Spec.InstanceTemplate},
	}
	created, err := client.EquinixV1().Instances().Create(ctx, inst, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.EquinixV1().Instances().Delete(ctx, created.Name, metav1.DeleteOptions{}) })

	changed := created.DeepCopy()
	changed.Spec.Plan = "m3.large.x86"
	_, err = client.EquinixV1().Instances().Update(ctx, changed, metav1.UpdateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fixed for the life of a server")

	// VLANs converge in place, so they stay editable.
	vlans := created.DeepCopy()
	vlans.Spec.NetworkingConfiguration.InterfaceConfiguration[0].VLANIDs = []string{"1000"}
	_, err = client.EquinixV1().Instances().Update(ctx, vlans, metav1.UpdateOptions{})
	require.NoError(t, err)
}
