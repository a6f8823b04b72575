package chart

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	harvesterv1beta1 "github.com/harvester/harvester/pkg/apis/harvesterhci.io/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/upstream"
)

// chartRepoURL is where the pipeline publishes the chart (scripts/package and
// scripts/publish-chart default to it).
const chartRepoURL = "https://harvester.github.io/harvester-equinix-addon"

func readAddonExample(t *testing.T) (raw []byte, a *harvesterv1beta1.Addon) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(chartDir(t), "examples", "addon.yaml"))
	require.NoError(t, err)
	a = &harvesterv1beta1.Addon{}
	// Harvester's own type: a field it does not have fails the test.
	require.NoError(t, yaml.UnmarshalStrict(raw, a))
	return raw, a
}

func TestAddonExample(t *testing.T) {
	_, a := readAddonExample(t)
	assert.Equal(t, "harvesterhci.io/v1beta1", a.APIVersion)
	assert.Equal(t, "Addon", a.Kind)
	assert.Equal(t, chartName, a.Name)
	assert.Equal(t, releaseNamespace, a.Namespace)
	assert.Equal(t, "true", a.Labels["addon.harvesterhci.io/experimental"])
	assert.NotEmpty(t, a.Labels["addon.harvesterhci.io/displayName"])

	assert.Equal(t, chartRepoURL, a.Spec.Repo, "the example installs from the repository releases are published to")
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	for _, script := range []string{"package", "publish-chart"} {
		raw, err := os.ReadFile(filepath.Join(root, "scripts", script))
		require.NoError(t, err)
		assert.Contains(t, string(raw), "CHART_REPO_URL:-"+chartRepoURL+"}", "scripts/%s publishes elsewhere", script)
	}
	assert.Equal(t, chartName, a.Spec.Chart)
	chartYAML, err := os.ReadFile(filepath.Join(chartDir(t), "Chart.yaml"))
	require.NoError(t, err)
	var meta struct {
		Version string `json:"version"`
	}
	require.NoError(t, yaml.Unmarshal(chartYAML, &meta))
	assert.Equal(t, meta.Version, a.Spec.Version, "the example installs this chart version")
	assert.True(t, a.Spec.Enabled)

	values := map[string]interface{}{}
	require.NoError(t, yaml.Unmarshal([]byte(a.Spec.ValuesContent), &values))
	assert.NotEmpty(t, values)
	valuesFile := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(valuesFile, []byte(a.Spec.ValuesContent), 0o600))
	m, _ := render(t, "--values", valuesFile)
	d := deployment(t, m)
	assert.Equal(t, int32(2), *d.Spec.Replicas, "valuesContent reaches the rendering")
	assert.Equal(t, "true", envValue(controllerContainer(t, d), "ORPHAN_DRY_RUN"))
	assert.NotNil(t, m.find("PodDisruptionBudget", releaseName), "two replicas come with a disruption budget")
}

var addonGVR = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "addons"}

// TestAddonExampleAgainstHarvestersCRD creates the example through the
// apiserver with Harvester's own Addon CRD (from the github.com/harvester/harvester
// module go.mod pins), which checks every field and label as a Harvester
// cluster would before its addon controller sees it.
func TestAddonExampleAgainstHarvestersCRD(t *testing.T) {
	c := shared.Require(t)
	ctx := context.Background()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	crd, err := upstream.HarvesterCRD(root, "harvesterhci.io_addons.yaml")
	require.NoError(t, err)
	dir := t.TempDir()
	raw, err := os.ReadFile(crd)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "addons.yaml"), raw, 0o600))
	require.NoError(t, cluster.InstallCRDs(ctx, c.RESTConfig, dir))
	ensureNamespace(ctx, t, c, releaseNamespace)

	example, want := readAddonExample(t)
	obj := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(example, &obj.Object))
	dyn, err := dynamic.NewForConfig(c.RESTConfig)
	require.NoError(t, err)
	addons := dyn.Resource(addonGVR).Namespace(releaseNamespace)
	created, err := addons.Create(ctx, obj, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
	require.NoError(t, err)
	t.Cleanup(func() { _ = addons.Delete(ctx, created.GetName(), metav1.DeleteOptions{}) })

	got := typed[harvesterv1beta1.Addon](t, created)
	assert.Equal(t, want.Spec, got.Spec, "the apiserver kept every spec field")
	assert.Equal(t, want.Labels, got.Labels)
	for k, v := range got.Labels {
		assert.Regexp(t, regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`), v, "label %s", k)
	}

	// The same CRD refuses what Harvester's controller could not use.
	bad := obj.DeepCopy()
	bad.SetName("missing-repo")
	unstructured.RemoveNestedField(bad.Object, "spec", "repo")
	_, err = addons.Create(ctx, bad, metav1.CreateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.repo")
}

func ensureNamespace(ctx context.Context, t *testing.T, c *cluster.Cluster, name string) {
	t.Helper()
	k8s, err := kubernetes.NewForConfig(c.RESTConfig)
	require.NoError(t, err)
	_, err = k8s.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}
