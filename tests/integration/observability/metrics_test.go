// Package observability scrapes the real binary's /metrics during an
// integration run and checks every metric the README documents.
package observability

import (
	"context"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	metalv1 "github.com/equinix/equinix-sdk-go/services/metalv1"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/simulator/metalsim"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

var shared cluster.Shared

func TestMain(m *testing.M) {
	os.Exit(framework.RunMain(m, cluster.Options{}, &shared))
}

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return families
}

// total sums a family's counters, gauges, and histogram/summary counts.
func total(f *dto.MetricFamily) float64 {
	var sum float64
	for _, m := range f.GetMetric() {
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.Summary != nil:
			sum += float64(m.GetSummary().GetSampleCount())
		}
	}
	return sum
}

// documentedMetrics are the metric names in the README's metrics table.
func documentedMetrics(t *testing.T) []string {
	t.Helper()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	raw, err := os.ReadFile(root + "/README.md")
	require.NoError(t, err)
	section := string(raw)[strings.Index(string(raw), "## Metrics"):]
	section = section[:strings.Index(section, "\n## ")]
	var names []string
	for _, m := range regexp.MustCompile("`((?:equinix_addon|lasso_controller|workqueue)_[a-z_*]+)`").FindAllStringSubmatch(section, -1) {
		names = append(names, m[1])
	}
	require.NotEmpty(t, names)
	return names
}

func clusterID(t *testing.T, env *framework.Env) string {
	ns, err := env.Kube.CoreV1().Namespaces().Get(env.Ctx, "kube-system", metav1.GetOptions{})
	require.NoError(t, err)
	return string(ns.UID)
}

// TestDocumentedMetricsAreLive runs a pool through creation, a failed
// provision, a remediation, an orphan and its deletion, then finds every
// metric of the README on the binary's /metrics with a non-zero value.
func TestDocumentedMetricsAreLive(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{NoController: true, RateLimit: 1_000_000})
	addon := framework.StartAddon(t, env, framework.AddonOptions{ExtraArgs: []string{
		"--orphan-sweep-interval", "300ms", "--orphan-grace-period", "1s", "--orphan-dry-run=false",
		"--device-events-interval", "500ms",
	}})

	// One provision fails (a provision failure, replaced).
	env.Sim.InjectFault(metalsim.Fault{Kind: metalsim.FaultProvisionFailure, Operations: []string{metalsim.OpCreateDevice}, Count: 1})
	p := framework.ParsePool(t, framework.SeedSample, "metrics")
	p.Spec.NodeCleanupWaitInterval = &metav1.Duration{Duration: time.Minute}
	pool := env.CreatePool(p)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("controller log:\n%s", addon.Log())
		}
	})
	env.WaitPoolReady(pool.Name, 1, 2*time.Minute)

	// A power request in maintenance mode: a power call and a request that
	// ends (the device's events are forwarded all along).
	inst := env.Instances(pool.Name)[0]
	_, err := env.Kube.CoreV1().Nodes().Patch(env.Ctx, inst.Name, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"harvesterhci.io/drain-requested":"true"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	_, err = env.Client.EquinixV1().Instances().Patch(env.Ctx, inst.Name, types.MergePatchType,
		[]byte(`{"spec":{"powerState":"off"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	powered := func(action v1.PowerAction) func() bool {
		return func() bool {
			i, err := env.Client.EquinixV1().Instances().Get(env.Ctx, inst.Name, metav1.GetOptions{})
			return err == nil && i.Status.LastPowerAction != nil && i.Status.LastPowerAction.Action == action &&
				i.Status.LastPowerAction.Result == v1.PowerResultSucceeded
		}
	}
	env.Eventually(powered(v1.PowerActionOff), time.Minute, "the power-off did not complete")
	_, err = env.Client.EquinixV1().Instances().Patch(env.Ctx, inst.Name, types.MergePatchType,
		[]byte(`{"spec":{"powerState":"on"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	env.Eventually(powered(v1.PowerActionOn), time.Minute, "the power-on did not complete")

	// A remediation: the node has not been Ready for two minutes.
	require.NoError(t, env.Agent.SetNodeNotReady(env.Ctx, inst.Name, time.Now().Add(-2*time.Minute)))
	env.Eventually(func() bool {
		insts := env.Instances(pool.Name)
		return len(insts) == 1 && insts[0].Name != inst.Name && insts[0].Status.Status == v1.PhaseManaged
	}, 2*time.Minute, "the unhealthy server was not replaced")

	// An orphan of this cluster, deleted after its grace period.
	cfg := metalv1.NewConfiguration()
	cfg.Servers = metalv1.ServerConfigurations{{URL: env.SimURL}}
	cfg.AddDefaultHeader("X-Auth-Token", framework.MetalToken)
	in := metalv1.DeviceCreateInMetroInput{Metro: "da", Plan: "c3.small.x86", OperatingSystem: "ubuntu_22_04",
		Hostname: metalv1.PtrString("orphan"), Tags: []string{v1.ClusterTag(clusterID(t, env))}}
	orphan, _, err := metalv1.NewAPIClient(cfg).DevicesApi.CreateDevice(context.Background(), framework.ProjectID).
		CreateDeviceRequest(metalv1.CreateDeviceRequest{DeviceCreateInMetroInput: &in}).Execute()
	require.NoError(t, err)
	env.Eventually(func() bool {
		d, ok := env.Sim.Device(orphan.GetId())
		return !ok || d.GetState() == metalv1.DEVICESTATE_DEPROVISIONING
	}, time.Minute, "the orphan was not deleted")

	managedDuringRun := scrape(t, addon.MetricsURL())
	var managed float64
	for _, m := range managedDuringRun["equinix_addon_instances"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "phase" && l.GetValue() == v1.PhaseManaged {
				managed += m.GetGauge().GetValue()
			}
		}
	}
	assert.Equal(t, 1.0, managed, "instances by phase")

	env.DeletePoolAndWait(pool.Name)
	families := scrape(t, addon.MetricsURL())
	for _, name := range documentedMetrics(t) {
		if strings.HasSuffix(name, "_*") {
			prefix := strings.TrimSuffix(name, "*")
			var found bool
			for fam, f := range families {
				found = found || (strings.HasPrefix(fam, prefix) && total(f) > 0)
			}
			assert.True(t, found, "no %s metric with a non-zero value", name)
			continue
		}
		f, ok := families[name]
		if !ok && name == "equinix_addon_instances" {
			f, ok = managedDuringRun[name], true
		}
		if !assert.True(t, ok, "documented metric %s is not exported", name) {
			continue
		}
		if name == "equinix_addon_instances" {
			continue // checked while the pool ran; it reads zero once the pool is gone
		}
		assert.Greater(t, total(f), 0.0, "documented metric %s is zero", name)
	}
	addon.AssertNoSecretLeaks()
}
