package release

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/helmtest"
	"github.com/harvester/harvester-equinix-addon/tests/upstream"
)

const (
	seederChart  = "harvester-seeder"
	inventoryCRD = "inventories.metal.harvesterhci.io"
)

var inventoryGVR = schema.GroupVersionResource{Group: "metal.harvesterhci.io", Version: "v1alpha1", Resource: "inventories"}

// TestPackageEmitsBothCharts: make package publishes the chart twice, and the
// two never template the same CRD: the Equinix CRDs only in
// harvester-equinix-addon, the Inventory CRD in neither (it is in crds/).
func TestPackageEmitsBothCharts(t *testing.T) {
	helmtest.Helm(t)
	dist := t.TempDir()
	out, err := pkg(t, dist, "v"+chartVersion, "https://charts.example.com/hea")
	require.NoError(t, err, out)
	idx := readIndex(t, filepath.Join(dist, "charts", "index.yaml"))
	require.Len(t, idx.Entries[seederChart], 1)
	assert.Equal(t, chartVersion, idx.Entries[seederChart][0].Version)
	assert.Equal(t, "v"+chartVersion, idx.Entries[seederChart][0].AppVersion)

	templated := map[string][]string{}
	for _, chart := range []string{helmtest.Chart, seederChart} {
		archive := filepath.Join(dist, "charts", chart+"-"+chartVersion+".tgz")
		// Released as Harvester installs each: the Addon's name is the release.
		rendered, err := helmtest.RunHelm(t, "template", chart, archive, "--namespace", helmtest.Namespace)
		require.NoError(t, err)
		m, err := helmtest.Parse(rendered)
		require.NoError(t, err)
		for _, crd := range m.OfKind("CustomResourceDefinition") {
			templated[crd.GetName()] = append(templated[crd.GetName()], chart)
		}
		d := m.Find("Deployment", chart)
		require.NotNil(t, d, "%s names its Deployment after the release", chart)
		mode := map[string]string{helmtest.Chart: "equinix", seederChart: "seeder"}[chart]
		assert.Contains(t, fmt.Sprint(d.Object), "value:"+mode, "%s defaults to the %s mode", chart, mode)

		withCRDs, err := helmtest.RunHelm(t, "show", "crds", archive)
		require.NoError(t, err)
		assert.Contains(t, withCRDs, "name: "+inventoryCRD, "%s installs the Inventory CRD when it is absent", chart)
	}
	assert.Len(t, templated, 4, "InstancePool, Instance, ElasticIP, ElasticIPPool")
	for crd, charts := range templated {
		assert.Equal(t, []string{helmtest.Chart}, charts, crd)
	}
}

// TestSeederAddonInstalls installs the packaged harvester-seeder chart from a
// served repository exactly as Harvester's addon controller would for
// examples/seeder-addon.yaml (the pools of servers you own on, so the
// release holds their CRDs), with no Metal Secret, checks what it made, that
// it lives beside the harvester-equinix-addon release once it hands that
// release the pool CRDs as docs/install.md says, and that it installs beside
// an Inventory CRD Seeder applied.
//
// The release's Deployment is then run as its pod would run (its
// environment, its ServiceAccount's RBAC, no Metal Secret), and a UI-shaped
// Inventory reaches inventoryNodeReady.
func TestSeederAddonInstalls(t *testing.T) {
	c := shared.Require(t)
	helmtest.Helm(t)
	ctx := context.Background()
	root := helmtest.Root(t)
	k8s, err := kubernetes.NewForConfig(c.RESTConfig)
	require.NoError(t, err)
	ensureNamespace(ctx, t, k8s, helmtest.Namespace)
	// A cluster this project was never installed on: the install page's
	// test leaves the pool CRDs of its (uninstalled) release behind.
	_, err = helmtest.Kubectl(c, "", "delete", "crd", "--ignore-not-found", poolCRDs[0], poolCRDs[1])
	require.NoError(t, err)
	// The pools read Harvester's server-version setting.
	require.NoError(t, cluster.InstallCRDs(ctx, c.RESTConfig, cluster.HarvesterCRDDir(root)))

	// Harvester's Addon CRD accepts the manifest as it is.
	addonCRD, err := upstream.HarvesterCRD(root, "harvesterhci.io_addons.yaml")
	require.NoError(t, err)
	_, err = helmtest.Kubectl(c, "", "apply", "--server-side", "-f", addonCRD)
	require.NoError(t, err)
	_, err = helmtest.Kubectl(c, "", "wait", "--for=condition=Established", "crd/addons.harvesterhci.io")
	require.NoError(t, err)
	seederAddonFile := filepath.Join(helmtest.ChartDir(t), "examples", "seeder-addon.yaml")
	_, err = helmtest.Kubectl(c, "", "apply", "--server-side", "--field-manager=seeder-test", "-f", seederAddonFile)
	require.NoError(t, err)

	dist := t.TempDir()
	repo := serve(t, filepath.Join(dist, "charts"))
	out, err := pkg(t, dist, "v"+chartVersion, repo)
	require.NoError(t, err, out)
	seeder := helmtest.ReadAddon(t, seederAddonFile)
	equinix := helmtest.ReadAddon(t, filepath.Join(helmtest.ChartDir(t), "examples", "addon.yaml"))

	t.Run("installs with no Metal Secret", func(t *testing.T) {
		// The install test of the README leaves one behind on this cluster.
		err := k8s.CoreV1().Secrets(helmtest.Namespace).Delete(ctx, "equinix-addon", metav1.DeleteOptions{})
		require.True(t, err == nil || apierrors.IsNotFound(err), "%v", err)
		secrets, err := k8s.CoreV1().Secrets(helmtest.Namespace).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, s := range secrets.Items {
			assert.NotContains(t, s.Data, "METAL_AUTH_TOKEN", "Secret %s holds Metal credentials", s.Name)
		}
		out, err := helmtest.InstallAddon(t, c, seeder, repo)
		require.NoError(t, err, out)
		checkSeederRelease(ctx, t, c, k8s, true)
		runSeederDeployment(ctx, t, c, k8s)
	})

	t.Run("the Inventory namespace policy", func(t *testing.T) {
		dyn, err := dynamic.NewForConfig(c.RESTConfig)
		require.NoError(t, err)
		create := func(namespace string) error {
			obj := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal([]byte(fmt.Sprintf(inventoryIn, namespace)), &obj.Object))
			_, err := dyn.Resource(inventoryGVR).Namespace(namespace).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}
		// The apiserver loads a new policy within a second or so.
		require.Eventually(t, func() bool {
			err := create("default")
			return err != nil && strings.Contains(err.Error(), "Inventories are served only in namespace harvester-system")
		}, 30*time.Second, 200*time.Millisecond)
		err = create("default")
		require.Error(t, err)
		assert.True(t, apierrors.IsForbidden(err), err.Error())
		assert.Contains(t, err.Error(), "not in default")
		require.NoError(t, create(seederv1alpha1.InventoryNamespace))
	})

	t.Run("the boot firmware annotation policy", func(t *testing.T) {
		dyn, err := dynamic.NewForConfig(c.RESTConfig)
		require.NoError(t, err)
		create := func(firmware, arch string) error {
			obj := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal([]byte(fmt.Sprintf(inventoryIn, seederv1alpha1.InventoryNamespace)), &obj.Object))
			obj.SetAnnotations(map[string]string{"equinix.harvesterhci.io/boot-firmware": firmware})
			if arch != "" {
				require.NoError(t, unstructured.SetNestedField(obj.Object, arch, "spec", "arch"))
			}
			_, err := dyn.Resource(inventoryGVR).Namespace(seederv1alpha1.InventoryNamespace).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}
		require.Eventually(t, func() bool {
			err := create("bios", "")
			return err != nil && strings.Contains(err.Error(), `UEFI or Legacy, not "bios"`)
		}, 30*time.Second, 200*time.Millisecond)
		err = create("Legacy", "arm64")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "arm64 servers boot UEFI only")
		require.NoError(t, create("UEFI", "arm64"))
		require.NoError(t, create("Legacy", "amd64"))
	})

	t.Run("beside the harvester-equinix-addon release", func(t *testing.T) {
		// docs/install.md: the harvester-seeder release gives up the pool
		// CRDs and takes another node port, the CRDs are handed over, then
		// the Equinix release installs.
		out, err := helmtest.Kubectl(c, "", "get", "crd", poolCRDs[0], "-o", "jsonpath={.metadata.annotations.meta\\.helm\\.sh/release-name}")
		require.NoError(t, err)
		require.Equal(t, seeder.Name, out, "the example's release holds the pool CRDs")
		beside := seeder.DeepCopy()
		beside.Spec.ValuesContent += "  installCRDs: false\nipxe:\n  service:\n    nodePort: 30882\n"
		out, err = helmtest.InstallAddon(t, c, beside, repo)
		require.NoError(t, err, out)
		out, err = helmtest.InstallAddon(t, c, equinix, repo)
		require.Error(t, err, "Helm refuses CRDs another release owns:\n%s", out)
		handOver := docBlocks(t, "docs/install.md", "## As an Addon or with helm")
		require.Len(t, handOver, 1)
		runBlock(t, c, handOver[0])
		out, err = helmtest.InstallAddon(t, c, equinix, repo)
		require.NoError(t, err, out)
		// An upgrade of either (Harvester runs one on every Addon change)
		// takes nothing from the other.
		out, err = helmtest.InstallAddon(t, c, beside, repo)
		require.NoError(t, err, out)
		out, err = helmtest.InstallAddon(t, c, equinix, repo)
		require.NoError(t, err, out)
		checkSeederRelease(ctx, t, c, k8s, false)
		_, err = helmRelease(t, c, "uninstall", equinix.Name)
		require.NoError(t, err)
		// And back: the CRDs (kept) to the harvester-seeder release again.
		runBlock(t, c, strings.ReplaceAll(handOver[0], "release-name="+equinix.Name, "release-name="+seeder.Name))
		out, err = helmtest.InstallAddon(t, c, seeder, repo)
		require.NoError(t, err, out)
		checkSeederRelease(ctx, t, c, k8s, true)
	})

	t.Run("disabling keeps the Inventory CRD", func(t *testing.T) {
		_, err := helmRelease(t, c, "uninstall", seeder.Name)
		require.NoError(t, err)
		_, err = helmtest.Kubectl(c, "", "get", "crd", inventoryCRD)
		require.NoError(t, err, "Helm never deletes a CRD of crds/: the UI's Inventories survive")
		_, err = k8s.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, seeder.Name+"-inventory-namespace", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "the policy goes with the release")
	})

	t.Run("beside Seeder's own Inventory CRD", func(t *testing.T) {
		ext, err := apiextclient.NewForConfig(c.RESTConfig)
		require.NoError(t, err)
		crds := ext.ApiextensionsV1().CustomResourceDefinitions()
		require.NoError(t, crds.Delete(ctx, inventoryCRD, metav1.DeleteOptions{}))
		require.Eventually(t, func() bool {
			_, err := crds.Get(ctx, inventoryCRD, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, 30*time.Second, 200*time.Millisecond)
		// Seeder applies its CRD itself, marked as its own and owned by no
		// release; here the addon's schema stands in for Seeder's.
		raw, err := os.ReadFile(filepath.Join(cluster.InventoryCRDDir(root), "metal.harvesterhci.io_inventories.yaml"))
		require.NoError(t, err)
		obj := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal(raw, &obj.Object))
		obj.SetAnnotations(map[string]string{seederv1alpha1.SeederCRDOwnerAnnotation: seederv1alpha1.SeederCRDOwnerID})
		_, err = helmtest.Kubectl(c, string(mustYAML(t, obj.Object)), "create", "-f", "-")
		require.NoError(t, err)

		out, err := helmtest.InstallAddon(t, c, seeder, repo)
		require.NoError(t, err, "a CRD in crds/ that exists is left alone:\n%s", out)
		got, err := crds.Get(ctx, inventoryCRD, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, seederv1alpha1.SeederCRDOwnerID, got.Annotations[seederv1alpha1.SeederCRDOwnerAnnotation], "Seeder's CRD stays Seeder's")
		assert.NotContains(t, got.Annotations, "meta.helm.sh/release-name")
		_, err = helmRelease(t, c, "uninstall", seeder.Name)
		require.NoError(t, err)
	})
}

// inventoryIn is a UI-shaped Inventory in a namespace.
const inventoryIn = `apiVersion: metal.harvesterhci.io/v1alpha1
kind: Inventory
metadata:
  name: node-1
  namespace: %s
spec:
  baseboardSpec:
    connection:
      host: 172.16.1.1
      port: 623
      insecureTLS: false
      authSecretRef: {namespace: bmc, name: node-1}
  events: {enabled: true, pollingInterval: 1h}
  primaryDisk: ""
  managementInterfaceMacAddress: ""
`

// poolCRDs are the CRDs of the pools, which the harvester-seeder release
// holds with the pools of servers you own on, unless the Equinix release
// does.
var poolCRDs = []string{"instancepools.equinix.harvesterhci.io", "instances.equinix.harvesterhci.io"}

// checkSeederRelease checks what the harvester-seeder release made: the
// Inventory CRD owned by no release, the hardware RBAC and that of the pools
// of servers you own, a Deployment in the hardware mode with its own Lease
// and no Secret, the boot endpoint's Service, and of the Equinix CRDs only
// the pools' when ownsPoolCRDs.
func checkSeederRelease(ctx context.Context, t *testing.T, c *cluster.Cluster, k8s kubernetes.Interface, ownsPoolCRDs bool) {
	t.Helper()
	_, err := helmtest.Kubectl(c, "", "wait", "--for=condition=Established", "crd/"+inventoryCRD)
	require.NoError(t, err)
	ext, err := apiextclient.NewForConfig(c.RESTConfig)
	require.NoError(t, err)
	crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, inventoryCRD, metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, crd.Annotations, "meta.helm.sh/release-name", "no release owns the Inventory CRD")

	manifest, err := helmRelease(t, c, "get", "manifest", seederChart)
	require.NoError(t, err)
	m, err := helmtest.Parse(manifest)
	require.NoError(t, err)
	var templated []string
	for _, crd := range m.OfKind("CustomResourceDefinition") {
		templated = append(templated, crd.GetName())
	}
	if ownsPoolCRDs {
		assert.ElementsMatch(t, poolCRDs, templated, "the hardware release holds the pools' CRDs only")
	} else {
		assert.Empty(t, templated, "the Equinix release holds every Equinix CRD")
	}

	role, err := k8s.RbacV1().ClusterRoles().Get(ctx, seederChart, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Subset(t, role.Rules, []rbacv1.PolicyRule{
		{APIGroups: []string{"metal.harvesterhci.io"}, Resources: []string{"inventories"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"metal.harvesterhci.io"}, Resources: []string{"inventories/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"},
			ResourceNames: []string{"inventories.metal.harvesterhci.io", "machines.bmc.tinkerbell.org"}, Verbs: []string{"get"}},
		{APIGroups: []string{"equinix.harvesterhci.io"}, Resources: []string{"instancepools"}, Verbs: []string{"list", "watch", "update"}},
		// What Seeder leaves, taken over once it no longer runs.
		{APIGroups: []string{"metal.harvesterhci.io"}, Resources: []string{"inventories"}, Verbs: []string{"patch"}},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"},
			ResourceNames: []string{"inventories.metal.harvesterhci.io"}, Verbs: []string{"update"}},
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations"},
			ResourceNames: []string{seederv1alpha1.SeederWebhookName}, Verbs: []string{"get", "delete"}},
	})
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			assert.NotContains(t, []string{"elasticips", "elasticippools", "ippools", "services"}, res, "an Equinix-only grant")
			if res == "secrets" {
				assert.Equal(t, []string{"get"}, r.Verbs, "Secrets by name only, cluster-wide")
			}
		}
	}

	d, err := k8s.AppsV1().Deployments(helmtest.Namespace).Get(ctx, seederChart, metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	ctr := d.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "harvester/harvester-equinix-addon:v"+chartVersion, ctr.Image, "the addon's image, not Seeder's")
	assert.Equal(t, seederChart, d.Spec.Template.Spec.ServiceAccountName)
	env := map[string]string{}
	for _, e := range ctr.Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil {
			assert.Nil(t, e.ValueFrom.SecretKeyRef, "%s comes from a Secret", e.Name)
		}
	}
	assert.Empty(t, ctr.EnvFrom)
	for _, v := range d.Spec.Template.Spec.Volumes {
		assert.Nil(t, v.Secret, "volume %s is a Secret", v.Name)
	}
	assert.Equal(t, "seeder", env["MODE"])
	assert.Equal(t, "json", env["LOG_FORMAT"], "the Addon's valuesContent reached the release")
	assert.Equal(t, seederChart+"-hardware", env["LEADER_LOCK_NAME"])
	assert.Equal(t, "true", env["OWNED_POOLS"])
	svc, err := k8s.CoreV1().Services(helmtest.Namespace).Get(ctx, seederChart+"-ipxe", metav1.GetOptions{})
	require.NoError(t, err, "the boot endpoint of the pools' servers")
	require.Len(t, svc.Spec.Ports, 1)
	want := map[bool]int32{true: 30881, false: 30882}[ownsPoolCRDs]
	assert.Equal(t, want, svc.Spec.Ports[0].NodePort, "the documented node port")
}

// runBlock runs a shell block of the docs against the test cluster.
func runBlock(t *testing.T, c *cluster.Cluster, block string) {
	t.Helper()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", block)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig,
		"PATH="+cluster.DefaultBinDir()+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "block failed:\n%s\n---\n%s", block, out)
}

func helmRelease(t *testing.T, c *cluster.Cluster, args ...string) (string, error) {
	t.Helper()
	return helmtest.RunHelm(t, append(args, "--namespace", helmtest.Namespace, "--kubeconfig", c.Kubeconfig)...)
}

func ensureNamespace(ctx context.Context, t *testing.T, k8s kubernetes.Interface, name string) {
	t.Helper()
	_, err := k8s.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

func mustYAML(t *testing.T, obj interface{}) []byte {
	t.Helper()
	raw, err := yaml.Marshal(obj)
	require.NoError(t, err)
	return raw
}
