package chart

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// addon mirrors harvesterhci.io/v1beta1 Addon; the five spec fields are
// serialised without omitempty, so all must be present.
type addon struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Repo          string `json:"repo"`
		Chart         string `json:"chart"`
		Version       string `json:"version"`
		Enabled       bool   `json:"enabled"`
		ValuesContent string `json:"valuesContent"`
	} `json:"spec"`
}

func TestAddonExample(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir(t), "examples", "addon.yaml"))
	require.NoError(t, err)
	var a addon
	require.NoError(t, yaml.UnmarshalStrict(raw, &a))
	assert.Equal(t, "harvesterhci.io/v1beta1", a.APIVersion)
	assert.Equal(t, "Addon", a.Kind)
	assert.Equal(t, chartName, a.Metadata.Name)
	assert.Equal(t, releaseNamespace, a.Metadata.Namespace)
	assert.Equal(t, "true", a.Metadata.Labels["addon.harvesterhci.io/experimental"])

	var generic struct {
		Spec map[string]interface{} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &generic))
	for _, field := range []string{"repo", "chart", "version", "enabled", "valuesContent"} {
		assert.Contains(t, generic.Spec, field)
	}
	assert.Len(t, generic.Spec, 5)

	u, err := url.Parse(a.Spec.Repo)
	require.NoError(t, err)
	assert.Contains(t, []string{"http", "https"}, u.Scheme)
	assert.NotEmpty(t, u.Host)
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
}
