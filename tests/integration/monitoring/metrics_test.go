package monitoring

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/harvester/harvester-equinix-addon/tests/helmtest"
)

// notExported are the names the alerts and the dashboard may use although
// this build does not export them, each with the reason. Any other name that
// the controller does not export fails the tests below.
var notExported = map[string]string{
	// Prometheus's own health of every scraped target.
	"up": "Prometheus's scrape health of each target",
}

var optsKinds = map[string][]string{
	"CounterOpts":   {""},
	"GaugeOpts":     {""},
	"HistogramOpts": {"_bucket", "_sum", "_count"},
	"SummaryOpts":   {"", "_sum", "_count"},
}

// exportedMetrics reads every metric the controller defines from its source:
// each prometheus.CounterOpts, GaugeOpts, HistogramOpts and SummaryOpts
// literal under pkg/, with the series names Prometheus stores for its kind.
// A name the scan cannot read (a Namespace, a computed Name) fails the test
// rather than being skipped.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	fset := token.NewFileSet()
	root := filepath.Join(helmtest.Root(t), "pkg")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			sel, ok := lit.Type.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			suffixes, known := optsKinds[sel.Sel.Name]
			if !ok || pkg.Name != "prometheus" || !known {
				return true
			}
			name := ""
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				key, _ := kv.Key.(*ast.Ident)
				switch key.Name {
				case "Namespace", "Subsystem":
					t.Errorf("%s: %s in prometheus.%s; the name check reads Name only", fset.Position(kv.Pos()), key.Name, sel.Sel.Name)
				case "Name":
					bl, ok := kv.Value.(*ast.BasicLit)
					if !ok || bl.Kind != token.STRING {
						t.Errorf("%s: a computed metric name cannot be checked", fset.Position(kv.Pos()))
						continue
					}
					name, _ = strconv.Unquote(bl.Value)
				}
			}
			require.NotEmpty(t, name, "%s: prometheus.%s without a Name", fset.Position(lit.Pos()), sel.Sel.Name)
			for _, s := range suffixes {
				names[name+s] = true
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	// The scan must see the metrics everyone relies on, or it is broken.
	for _, must := range []string{"equinix_addon_instances", "equinix_addon_metal_api_requests_total", "equinix_addon_join_duration_seconds_bucket"} {
		require.True(t, names[must], "the source scan missed %s", must)
	}
	return names
}

var metricToken = regexp.MustCompile(`\b(equinix_addon_[a-z0-9_]+|lasso_[a-z0-9_]+|workqueue_[a-z0-9_]+|up)\b\s*[{\[)]`)

// usedMetrics returns the metric names a PromQL expression selects.
func usedMetrics(expr string) []string {
	var out []string
	for _, m := range metricToken.FindAllStringSubmatch(expr, -1) {
		out = append(out, m[1])
	}
	return out
}

func assertReal(t *testing.T, exported map[string]bool, where, expr string) {
	t.Helper()
	used := usedMetrics(expr)
	assert.NotEmpty(t, used, "%s: no metric found in %q", where, expr)
	for _, name := range used {
		if exported[name] {
			continue
		}
		_, allowed := notExported[name]
		assert.True(t, allowed, "%s uses %s, which the controller does not export", where, name)
	}
}

func TestMetricTokenizer(t *testing.T) {
	assert.Equal(t, []string{"equinix_addon_instances"}, usedMetrics(`max by (pool) (equinix_addon_instances{phase="unhealthy"}) > 0`))
	assert.Equal(t, []string{"equinix_addon_provision_duration_seconds_bucket"},
		usedMetrics(`histogram_quantile(0.5, sum by (le) (rate(equinix_addon_provision_duration_seconds_bucket[5m])))`))
	assert.Equal(t, []string{"up"}, usedMetrics(`absent(up{job="x"} == 1)`))
	assert.Equal(t, []string{"equinix_addon_metal_api_rate_limit_remaining"}, usedMetrics(`min(equinix_addon_metal_api_rate_limit_remaining)`))
	assert.Empty(t, usedMetrics(`sum by (pool) (rate(x[5m]))`))
}

// TestRulesUseRealMetrics: a renamed metric would leave an alert that can never
// fire; every name an alert selects must be one the controller exports.
func TestRulesUseRealMetrics(t *testing.T) {
	exported := exportedMetrics(t)
	for name, expr := range alertRules(t, helmtest.Render(t, monitoringOn...)) {
		assertReal(t, exported, "alert "+name, expr)
	}
}

// TestPromtoolSeriesUseRealMetrics: the unit tests feed series under the names
// the controller exports, so passing them says something about production.
func TestPromtoolSeriesUseRealMetrics(t *testing.T) {
	exported := exportedMetrics(t)
	raw, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	require.NoError(t, err)
	var file struct {
		Tests []struct {
			InputSeries []struct {
				Series string `json:"series"`
			} `json:"input_series"`
		} `json:"tests"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &file))
	n := 0
	for _, tc := range file.Tests {
		for _, s := range tc.InputSeries {
			assertReal(t, exported, "testdata series", s.Series)
			n++
		}
	}
	assert.Greater(t, n, 10)
}

// TestAllowListIsNeeded keeps the allow-list honest: once a listed metric is
// exported (issue 16 lands), its entry must go.
func TestAllowListIsNeeded(t *testing.T) {
	exported := exportedMetrics(t)
	var stale []string
	for name := range notExported {
		if exported[name] {
			stale = append(stale, name)
		}
	}
	sort.Strings(stale)
	assert.Empty(t, stale, "exported now: remove from notExported")
}
