package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestChartMemoryLimitIsTheBenchDefault(t *testing.T) {
	raw, err := os.ReadFile("../../../charts/harvester-equinix-addon/values.yaml")
	require.NoError(t, err)
	var values struct {
		Resources struct {
			Limits map[string]string `json:"limits"`
		} `json:"resources"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &values))
	assert.Equal(t, values.Resources.Limits["memory"], chartMemoryLimit,
		"the benchmark measures the controller under the chart's memory limit")
}

func TestGoMemLimit(t *testing.T) {
	for limit, want := range map[string]string{"256Mi": "230MiB", "200Mi": "180MiB", "1Gi": "921MiB", "none": "", "": ""} {
		got, err := goMemLimit(limit)
		require.NoError(t, err, limit)
		assert.Equal(t, want, got, limit)
	}
	for _, bad := range []string{"lots", "-1Mi", "0"} {
		_, err := goMemLimit(bad)
		assert.Error(t, err, bad)
	}
}
