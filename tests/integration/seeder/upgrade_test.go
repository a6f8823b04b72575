package seeder

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/controller/addonspec"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/helmtest"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/upstream"
)

// userValues are what a user of the addon's harvester-seeder Addon sets:
// the hardware mode, with fencing on.
const userValues = "mode: seeder\nlogFormat: json\nfencing:\n  enabled: true\n  gracePeriod: 10m\n"

// Harvester's own upgrade step, run for real: upgrade_addon of Harvester
// v1.8.0's package/upgrade/lib.sh (from its module, the version go.mod
// pins), in bash, with kubectl and mikefarah's yq as its image has them,
// against the Addon the addon is installed as. Its bundled Seeder Addon
// manifest (/usr/local/share/addons/harvester-seeder.yaml in the upgrade
// image) is testdata/harvester-v1.8.0/addons/harvester-seeder.yaml, as
// harvester/addons v1.8.0 renders it (chart 1.8.0, image tag v1.8.0);
// only that path is mapped onto it. The script merge-patches the Addon's
// version and values with Seeder's; the controller, still running (the
// failed deploy of Seeder's version in the addon's repository leaves the
// release as it was), writes the user's back, and the Inventory it serves
// is polled throughout. Before the fix nothing wrote them back.
func TestSurvivesHarvesterUpgrade(t *testing.T) {
	yq := helmtest.Yq(t)
	root := helmtest.Root(t)
	env := framework.New(t, &shared, framework.Options{Mode: config.ModeSeeder, Configure: func(c *config.Config) {
		c.BMCTimeout = time.Second
		c.SeederCheckInterval = 500 * time.Millisecond
	}})
	addonCRD, err := upstream.HarvesterCRD(root, "harvesterhci.io_addons.yaml")
	require.NoError(t, err)
	out, err := helmtest.Kubectl(env.Cluster, "", "apply", "--server-side", "-f", addonCRD)
	require.NoError(t, err, out)
	out, err = helmtest.Kubectl(env.Cluster, "", "wait", "--for=condition=Established", "crd/addons.harvesterhci.io")
	require.NoError(t, err, out)

	// The user's Addon: the project's manifest, with the user's values.
	manifest := helmtest.ReadAddon(t, filepath.Join(helmtest.ChartDir(t), "examples", "seeder-addon.yaml"))
	manifest.Spec.ValuesContent = userValues
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(manifest)
	require.NoError(t, err)
	addons := addonClient(t, env)
	_, err = addons.Create(env.Ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = addons.Delete(env.Ctx, seederv1alpha1.SeederAddonName, metav1.DeleteOptions{}) })
	wantVersion := manifest.Spec.Version
	env.Eventually(func() bool {
		a, err := addons.Get(env.Ctx, seederv1alpha1.SeederAddonName, metav1.GetOptions{})
		return err == nil && strings.Contains(a.GetAnnotations()[addonspec.AnnotationDesiredSpec], "fencing")
	}, time.Minute, "the Addon's spec was not recorded")

	_, srv := framework.RedfishBMC(t, bmcsim.Options{Username: bmcUser, Password: bmcPassword})
	env.CreateReadyNode("upgraded")
	env.CreateBMCSecret("upgraded", bmcUser, bmcPassword)
	env.CreateInventory(framework.RedfishInventory("upgraded", srv))
	env.Eventually(func() bool { return ready(env, "upgraded") }, time.Minute, "never ready")

	stdout := runUpgradeAddon(t, env, root, yq)
	assert.Contains(t, stdout, "addon.harvesterhci.io/harvester-seeder patched", "Harvester's step did not patch the Addon")

	env.Eventually(func() bool {
		a, err := addons.Get(env.Ctx, seederv1alpha1.SeederAddonName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		v, _, _ := unstructured.NestedString(a.Object, "spec", "version")
		values, _, _ := unstructured.NestedString(a.Object, "spec", "valuesContent")
		return v == wantVersion && values == userValues
	}, time.Minute, "the user's version and values were not written back")
	assert.True(t, env.EventRecorded(seederv1alpha1.SeederAddonName, equinixv1.ReasonAddonSpecRestored))
	assert.GreaterOrEqual(t, value(t, "equinix_addon_addon_spec_restored_total", ""), float64(1))
	a, err := addons.Get(env.Ctx, seederv1alpha1.SeederAddonName, metav1.GetOptions{})
	require.NoError(t, err)
	repo, _, _ := unstructured.NestedString(a.Object, "spec", "repo")
	assert.Equal(t, "https://harvester.github.io/harvester-equinix-addon", repo)
	env.WaitPolls("upgraded", 2)
	assert.True(t, ready(env, "upgraded"))
}

// runUpgradeAddon sources Harvester's lib.sh and runs upgrade_addon
// harvester-seeder harvester-system, as upgrade_manifests.sh does, and
// returns what it printed.
func runUpgradeAddon(t *testing.T, env *framework.Env, root, yq string) string {
	t.Helper()
	lib, err := upstream.HarvesterFile(root, "package/upgrade/lib.sh")
	require.NoError(t, err)
	bundled, err := filepath.Abs(filepath.Join("testdata", "harvester-v1.8.0", "addons"))
	require.NoError(t, err)
	bin := t.TempDir()
	require.NoError(t, os.Symlink(yq, filepath.Join(bin, "yq")))
	require.NoError(t, os.Symlink(filepath.Join(cluster.DefaultBinDir(), "kubectl"), filepath.Join(bin, "kubectl")))
	// The image's bundled manifests are at /usr/local/share/addons: cat
	// maps that one folder onto the test's copy and is cat otherwise.
	script := `set -e
source "$HARVESTER_LIB"
cat() {
  if [[ $# -eq 1 && $1 == /usr/local/share/addons/* ]]; then command cat "$BUNDLED_ADDONS/${1#/usr/local/share/addons/}"; else command cat "$@"; fi
}
upgrade_addon harvester-seeder harvester-system
`
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + t.TempDir(), "KUBECONFIG=" + env.Cluster.Kubeconfig,
		"HARVESTER_LIB=" + lib, "BUNDLED_ADDONS=" + bundled, "HARVESTER_UPGRADE_NAME=hvst-upgrade-i36"}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "upgrade_addon: %s", out)
	return string(out)
}

func addonClient(t *testing.T, env *framework.Env) dynamic.ResourceInterface {
	t.Helper()
	d, err := dynamic.NewForConfig(env.Cluster.RESTConfig)
	require.NoError(t, err)
	return d.Resource(schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "addons"}).Namespace(seederv1alpha1.SeederAddonNamespace)
}
