// Package monitoring tests the chart's objects for rancher-monitoring: the
// alerting rules with promtool against series named like the controller's real
// metrics, the Grafana dashboard's queries, and the ServiceMonitor,
// PrometheusRule and dashboard ConfigMap applied to a real apiserver that has
// the Prometheus Operator's own CRDs.
package monitoring

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/helmtest"
)

var shared cluster.Shared

func TestMain(m *testing.M) {
	os.Exit(cluster.RunMain(m, cluster.Options{}, &shared))
}

// monitoringOn are the values that switch every monitoring object on.
var monitoringOn = []string{
	"--set", "monitoring.serviceMonitor.enabled=true",
	"--set", "monitoring.prometheusRule.enabled=true",
	"--set", "monitoring.dashboard.enabled=true",
}

const (
	ruleName      = helmtest.Release
	dashboardName = helmtest.Release + "-dashboard"
)

// writeRules writes the rendered PrometheusRule's groups as the rules file
// Prometheus (and promtool) reads, and returns its path.
func writeRules(t *testing.T, dir string, m helmtest.Manifests) string {
	t.Helper()
	rule := m.Find("PrometheusRule", ruleName)
	require.NotNil(t, rule, "no PrometheusRule rendered")
	spec, ok := rule.Object["spec"].(map[string]interface{})
	require.True(t, ok)
	raw, err := yaml.Marshal(map[string]interface{}{"groups": spec["groups"]})
	require.NoError(t, err)
	path := filepath.Join(dir, "rules.yaml")
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	return path
}

// alertRules returns each alert's name and expression.
func alertRules(t *testing.T, m helmtest.Manifests) map[string]string {
	t.Helper()
	rule := m.Find("PrometheusRule", ruleName)
	require.NotNil(t, rule)
	var spec struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	raw, err := yaml.Marshal(rule.Object["spec"])
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, &spec))
	out := map[string]string{}
	for _, g := range spec.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "a rule without an alert name")
			out[r.Alert] = r.Expr
		}
	}
	return out
}
