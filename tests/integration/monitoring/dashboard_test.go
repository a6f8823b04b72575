package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/harvester/harvester-equinix-addon/tests/helmtest"
)

type dashboard struct {
	UID    string `json:"uid"`
	Title  string `json:"title"`
	Panels []struct {
		Type    string `json:"type"`
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"list"`
	} `json:"templating"`
}

func renderedDashboard(t *testing.T, args ...string) (*corev1.ConfigMap, dashboard) {
	t.Helper()
	u := helmtest.Render(t, append(monitoringOn, args...)...).Find("ConfigMap", dashboardName)
	require.NotNil(t, u)
	cm := &corev1.ConfigMap{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, cm, true))
	require.Len(t, cm.Data, 1)
	var d dashboard
	require.NoError(t, json.Unmarshal([]byte(cm.Data["harvester-equinix-addon.json"]), &d))
	return cm, d
}

func (d dashboard) exprs() map[string]string {
	out := map[string]string{}
	for _, p := range d.Panels {
		for i, tg := range p.Targets {
			out[fmt.Sprintf("%s #%d", p.Title, i)] = tg.Expr
		}
	}
	return out
}

// TestDashboardConfigMap: where and how rancher-monitoring's Grafana finds the
// dashboard, and that it shows what the issue asks for.
func TestDashboardConfigMap(t *testing.T) {
	cm, d := renderedDashboard(t)
	assert.Equal(t, "cattle-dashboards", cm.Namespace)
	assert.Equal(t, "1", cm.Labels["grafana_dashboard"])
	assert.Equal(t, "harvester-equinix-addon", d.UID)
	assert.NotEmpty(t, d.Title)
	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name+":"+v.Type)
	}
	assert.Contains(t, vars, "datasource:datasource", "the data source is chosen, not hard-coded to one Grafana's")

	all := ""
	for _, e := range d.exprs() {
		all += e + "\n"
	}
	for what, want := range map[string]string{
		"servers per pool":        "sum by (pool) (max by (pool, phase) (equinix_addon_instances",
		"servers by phase":        "sum by (phase) (max by (pool, phase) (equinix_addon_instances",
		"provision duration":      "rate(equinix_addon_provision_duration_seconds_bucket",
		"join duration":           "rate(equinix_addon_join_duration_seconds_bucket",
		"API calls by code":       "sum by (code) (rate(equinix_addon_metal_api_requests_total",
		"API calls by operation":  "sum by (operation) (rate(equinix_addon_metal_api_requests_total",
		"failures before joining": "equinix_addon_provision_failures_total",
		"hardware health":         "max by (node, subsystem) (equinix_addon_hardware_health)",
		"BMCs unreachable":        "equinix_addon_bmc_reachable",
		"BMCs refusing logins":    "equinix_addon_bmc_authenticated",
		"predicted failures":      "equinix_addon_hardware_predicted_failures",
		"overdue polls":           "equinix_addon_hardware_last_poll_timestamp_seconds",
	} {
		assert.Contains(t, all, want, "the dashboard shows no %s", what)
	}

	cm, _ = renderedDashboard(t, "--set", "monitoring.dashboard.namespace=monitoring", "--set", "monitoring.dashboard.labels.team=infra")
	assert.Equal(t, "monitoring", cm.Namespace)
	assert.Equal(t, "infra", cm.Labels["team"])
	assert.Equal(t, "1", cm.Labels["grafana_dashboard"])
}

// TestDashboardQueries: every query selects metrics the controller exports,
// and parses as PromQL (promtool reads them as rules once Grafana's variables
// are given values).
func TestDashboardQueries(t *testing.T) {
	_, d := renderedDashboard(t)
	exported := exportedMetrics(t)
	exprs := d.exprs()
	require.GreaterOrEqual(t, len(exprs), 10)
	vars := strings.NewReplacer("$__rate_interval", "5m", "$__range", "1h", "$pool", ".*")
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	i := 0
	for where, expr := range exprs {
		assertReal(t, exported, "panel "+where, expr)
		raw, err := json.Marshal(vars.Replace(expr))
		require.NoError(t, err)
		fmt.Fprintf(&rules, "      - record: dashboard:query%d\n        expr: %s\n", i, raw)
		i++
	}
	path := filepath.Join(t.TempDir(), "dashboard-queries.yaml")
	require.NoError(t, os.WriteFile(path, []byte(rules.String()), 0o600))
	var check struct {
		Groups []map[string]interface{} `json:"groups"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(rules.String()), &check))
	out, err := helmtest.Run(exec.Command(helmtest.Promtool(t), "check", "rules", path))
	require.NoError(t, err)
	assert.Contains(t, out, "SUCCESS")
}
