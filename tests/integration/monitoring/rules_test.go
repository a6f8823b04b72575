package monitoring

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvester/harvester-equinix-addon/tests/helmtest"
)

// TestRulesPassPromtool checks the rendered rules the way Prometheus loads
// them and runs the unit tests in testdata/alerts_test.yaml: each alert fires
// on the series the controller would export in that situation, with the
// labels and text an operator reads, and stays quiet while it should.
func TestRulesPassPromtool(t *testing.T) {
	promtool := helmtest.Promtool(t)
	dir := t.TempDir()
	rules := writeRules(t, dir, helmtest.Render(t, monitoringOn...))

	out, err := helmtest.Run(exec.Command(promtool, "check", "rules", "--lint=all", "--lint-fatal", rules))
	require.NoError(t, err)
	assert.Contains(t, out, "SUCCESS")

	tests, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o600))
	cmd := exec.Command(promtool, "test", "rules", "alerts_test.yaml")
	cmd.Dir = dir
	out, err = helmtest.Run(cmd)
	require.NoError(t, err)
	assert.Contains(t, out, "SUCCESS")

	// Every alert has its own unit test.
	for name := range alertRules(t, helmtest.Render(t, monitoringOn...)) {
		assert.Contains(t, string(tests), "alertname: "+name+"\n", "testdata/alerts_test.yaml has no test of %s", name)
	}
}

// TestAlertsAreDocumented: the monitoring page's alerts table lists exactly
// the alerts the chart ships.
func TestAlertsAreDocumented(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(helmtest.Root(t), "docs", "monitoring.md"))
	require.NoError(t, err)
	page := string(raw)
	i := strings.Index(page, "| Alert |")
	require.GreaterOrEqual(t, i, 0, "docs/monitoring.md has no alerts table")
	table := page[i:]
	table = table[:strings.Index(table, "\n\n")]
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Za-z]+)` \\|").FindAllStringSubmatch(table, -1) {
		documented = append(documented, m[1])
	}
	var shipped []string
	for name := range alertRules(t, helmtest.Render(t, monitoringOn...)) {
		shipped = append(shipped, name)
	}
	slices.Sort(documented)
	slices.Sort(shipped)
	assert.Equal(t, shipped, documented)
}

// TestMonitoringValues: everything is off by default (the CRDs exist only
// with rancher-monitoring), each switch brings its object, and the
// down-alert comes only with the scrape it watches.
func TestMonitoringValues(t *testing.T) {
	m := helmtest.Render(t)
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
		assert.Empty(t, m.OfKind(kind), kind)
	}
	assert.Nil(t, m.Find("ConfigMap", dashboardName))

	m = helmtest.Render(t, "--set", "monitoring.prometheusRule.enabled=true")
	rules := alertRules(t, m)
	assert.NotContains(t, rules, "EquinixAddonDown", "without the ServiceMonitor nothing sets up{}: the alert would always fire")
	assert.Contains(t, rules, "EquinixPoolDegraded")
	assert.Empty(t, m.OfKind("ServiceMonitor"))

	m = helmtest.Render(t, append(monitoringOn, "--set", "monitoring.prometheusRule.labels.team=infra",
		"--set", "monitoring.serviceMonitor.labels.release=rancher-monitoring")...)
	assert.Contains(t, alertRules(t, m), "EquinixAddonDown")
	assert.Equal(t, "infra", m.Find("PrometheusRule", ruleName).GetLabels()["team"])
	assert.Equal(t, "rancher-monitoring", m.Find("ServiceMonitor", helmtest.Release).GetLabels()["release"])

	_, err := helmtest.RunHelm(t, "template", helmtest.Release, helmtest.ChartDir(t), "--namespace", helmtest.Namespace,
		"--set", "monitoring.serviceMonitor.enabled=true", "--set", "metrics.enabled=false")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "monitoring.serviceMonitor.enabled needs metrics.enabled")
}
