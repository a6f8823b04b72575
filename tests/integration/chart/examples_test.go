package chart

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	harvesterv1beta1 "github.com/harvester/harvester/pkg/apis/harvesterhci.io/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/harvester/harvester-equinix-addon/pkg/addresspool"
	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/bmc"
	"github.com/harvester/harvester-equinix-addon/pkg/bootfirmware"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/upstream"
)

// TestEveryExampleApplies applies each file of examples/, as it is, to a
// real apiserver with the chart's CRDs (those it templates, and the
// Inventory CRD of crds/) and Harvester's own Addon CRD, by server-side
// apply, which validates every field and CEL rule: a file added to
// examples/ is applied too. Each file is applied on its own and deleted
// after, since two of them (the Equinix credentials and the join token of
// owned servers) are alternatives for one Secret.
func TestEveryExampleApplies(t *testing.T) {
	c := shared.Require(t)
	requireHelm(t)
	ctx := context.Background()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	installExampleCRDs(ctx, t, c, root)
	ensureNamespace(ctx, t, c, releaseNamespace)

	dir := filepath.Join(chartDir(t), "examples")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var applied []string
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".yaml" {
			continue
		}
		file := filepath.Join(dir, e.Name())
		t.Run(e.Name(), func(t *testing.T) {
			// What another test left (the credentials Secret, from the same
			// example) stays, and this apply takes over its fields.
			before, err := kubectl(c, "", "get", "-f", file, "--ignore-not-found", "-o", "name")
			require.NoError(t, err)
			_, err = kubectl(c, "", "apply", "--server-side", "--force-conflicts", "--field-manager=examples-test", "-f", file)
			require.NoError(t, err)
			// Every object of the file is stored, under the name it gives.
			out, err := kubectl(c, "", "get", "-f", file, "-o", "name")
			require.NoError(t, err)
			stored := strings.Fields(out)
			assert.Len(t, stored, len(docsOf(t, file)), "objects of %s: %s", e.Name(), out)
			t.Cleanup(func() {
				for _, name := range stored {
					if !slices.Contains(strings.Fields(before), name) {
						_, _ = kubectl(c, "", "delete", "--ignore-not-found", "--wait=false", "-n", releaseNamespace, name)
					}
				}
			})
		})
		applied = append(applied, e.Name())
	}
	assert.Subset(t, applied, []string{"addon.yaml", "secret.yaml", "instancepool.yaml", "seeder-addon.yaml",
		"owned-join-token.yaml", "owned-servers.yaml", "owned-pool.yaml", "addresspool.yaml", "owned-pool-static.yaml"})
}

// installExampleCRDs installs what the examples are made of: the CRDs the
// chart renders (the Equinix kinds), its crds/ folder (the Inventory), and
// Harvester's Addon CRD from the module go.mod pins.
func installExampleCRDs(ctx context.Context, t *testing.T, c *cluster.Cluster, root string) {
	t.Helper()
	m, _ := render(t)
	for _, crd := range m.ofKind("CustomResourceDefinition") {
		raw, err := yaml.Marshal(crd.Object)
		require.NoError(t, err)
		applyServerSide(t, c, string(raw))
	}
	require.NoError(t, cluster.InstallCRDs(ctx, c.RESTConfig, cluster.InventoryCRDDir(root)))
	addonCRD, err := upstream.HarvesterCRD(root, "harvesterhci.io_addons.yaml")
	require.NoError(t, err)
	_, err = kubectl(c, "", "apply", "--server-side", "--field-manager=examples-test", "-f", addonCRD)
	require.NoError(t, err)
	_, err = kubectl(c, "", "wait", "--for=condition=Established", "--timeout=60s", "crd/addons.harvesterhci.io",
		"crd/inventories.metal.harvesterhci.io", "crd/addresspools.metal.harvesterhci.io", "crd/instancepools.equinix.harvesterhci.io", "crd/instances.equinix.harvesterhci.io")
	require.NoError(t, err)
}

// docsOf returns the YAML documents of a file that hold an object.
func docsOf(t *testing.T, file string) []string {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	objs, err := parseManifests(string(raw))
	require.NoError(t, err)
	docs := make([]string, 0, len(objs))
	for _, o := range objs {
		docs = append(docs, o.GetKind()+"/"+o.GetName())
	}
	return docs
}

// TestOwnedServerExamplesFitTogether: the owned-server examples are one
// start a newcomer follows (docs/first-owned-pool.md): the join token
// Secret is the one the controller reads, the Inventories are servers a
// pool can claim, and the pool chooses them with a spare.
func TestOwnedServerExamplesFitTogether(t *testing.T) {
	dir := filepath.Join(chartDir(t), "examples")

	token := typed[corev1.Secret](t, exampleObject(t, filepath.Join(dir, "owned-join-token.yaml"), "Secret"))
	assert.Equal(t, "equinix-addon", token.Name, "the controller's --join-token-secret")
	assert.Equal(t, releaseNamespace, token.Namespace)
	assert.Contains(t, token.StringData, "JOIN_TOKEN", "the controller's --join-token-key")
	assert.Contains(t, token.Labels, equinixv1.LabelSecret, "the controller caches only labelled Secrets")
	assert.Len(t, token.StringData, 1, "no Equinix Metal credentials for servers you own")

	seeder := &harvesterv1beta1.Addon{}
	raw, err := os.ReadFile(filepath.Join(dir, "seeder-addon.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(raw, seeder))
	valuesFile := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(valuesFile, []byte(seeder.Spec.ValuesContent), 0o600))
	m, _ := render(t, "--values", valuesFile)
	ctr := controllerContainer(t, deployment(t, m))
	assert.Equal(t, "true", envValue(ctr, "OWNED_POOLS"), "the Addon runs the pools of servers you own")
	assert.Equal(t, token.Name, envValue(ctr, "JOIN_TOKEN_SECRET"))
	assert.Equal(t, "JOIN_TOKEN", envValue(ctr, "JOIN_TOKEN_KEY"))

	pool := typed[equinixv1.InstancePool](t, exampleObject(t, filepath.Join(dir, "owned-pool.yaml"), "InstancePool"))
	require.NotNil(t, pool.Spec.Servers)
	selector, err := metav1.LabelSelectorAsSelector(&pool.Spec.Servers.Selector)
	require.NoError(t, err)
	raw, err = os.ReadFile(filepath.Join(dir, "owned-servers.yaml"))
	require.NoError(t, err)
	objs, err := parseManifests(string(raw))
	require.NoError(t, err)
	var chosen, macs []string
	firmware := map[string]bmc.BootFirmware{}
	for _, o := range objs.ofKind("Inventory") {
		inv := typed[seederv1alpha1.Inventory](t, o)
		assert.Equal(t, seederv1alpha1.InventoryNamespace, inv.Namespace)
		assert.Empty(t, validation.IsDNS1123Label(inv.Name), "%s: the name is the host name it installs with", inv.Name)
		assert.NotEmpty(t, inv.Spec.ManagementInterfaceMacAddress, "%s: a pool claims only a server with a MAC", inv.Name)
		assert.NotEmpty(t, inv.Spec.PrimaryDisk, inv.Name)
		assert.NotContains(t, inv.Annotations, "metal.harvesterhci.io/local-node-name", "%s is no node yet", inv.Name)
		ref := inv.Spec.BaseboardManagementSpec.Connection.AuthSecretRef
		bmcSecret := objs.find("Secret", ref.Name)
		require.NotNil(t, bmcSecret, "%s names Secret %s of the same file", inv.Name, ref.Name)
		assert.Equal(t, ref.Namespace, bmcSecret.GetNamespace())
		if selector.Matches(labels.Set(inv.Labels)) {
			chosen = append(chosen, inv.Name)
		}
		macs = append(macs, inv.Spec.ManagementInterfaceMacAddress)
		choice, problem := bootfirmware.For(inv, pool.Spec.Servers.BootFirmware)
		require.Nil(t, problem, "%s: a boot firmware the pool can tell its BMC", inv.Name)
		firmware[inv.Name] = choice.Want
	}
	// docs/first-owned-pool.md: the Redfish server boots as its firmware is
	// set, the IPMI one UEFI, and the annotated one Legacy.
	assert.Equal(t, map[string]bmc.BootFirmware{"rack-a-u01": bmc.BootFirmwareAny, "rack-a-u02": bmc.BootFirmwareUEFI,
		"rack-a-u03": bmc.BootFirmwareLegacy}, firmware)
	slices.Sort(macs)
	assert.Len(t, slices.Compact(macs), 3, "three servers, three MACs")
	assert.Len(t, chosen, 3)
	assert.Less(t, int(pool.Spec.Count), len(chosen), "a spare for a replacement")

	// The pool on a network without DHCP: its AddressPool is the example's,
	// beside the Inventories, and gives each of its servers an address;
	// its name server is one the AddressPool never hands out.
	static := typed[equinixv1.InstancePool](t, exampleObject(t, filepath.Join(dir, "owned-pool-static.yaml"), "InstancePool"))
	addresses := typed[seederv1alpha1.AddressPool](t, exampleObject(t, filepath.Join(dir, "addresspool.yaml"), "AddressPool"))
	assert.Equal(t, addresses.Name, static.Spec.Servers.AddressPool)
	assert.Equal(t, seederv1alpha1.InventoryNamespace, addresses.Namespace)
	assert.Equal(t, pool.Spec.Servers.Selector, static.Spec.Servers.Selector)
	for i := range chosen {
		a, _, err := addresspool.Allocate(addresses, addresspool.Holder{Name: chosen[i], Namespace: seederv1alpha1.InventoryNamespace})
		require.NoError(t, err)
		assert.NotContains(t, static.Spec.Servers.Nameservers, a.Addr().String())
	}
	assert.Subset(t, addresses.Spec.ReservedAddresses, static.Spec.Servers.Nameservers)
}

// exampleObject is the one object of a kind in an example file.
func exampleObject(t *testing.T, file, kind string) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	objs, err := parseManifests(string(raw))
	require.NoError(t, err)
	of := objs.ofKind(kind)
	require.Len(t, of, 1, "%s holds one %s", file, kind)
	return of[0]
}
