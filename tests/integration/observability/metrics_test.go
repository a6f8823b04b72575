// Package observability scrapes the real binary's /metrics during an
// integration run and checks every metric docs/monitoring.md documents.
package observability

import (
	"context"
	"fmt"
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

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	hardwarev1 "github.com/harvester/harvester-equinix-addon/pkg/apis/hardware/v1"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

var shared cluster.Shared

func TestMain(m *testing.M) {
	os.Exit(framework.RunMain(m, cluster.Options{}, &shared))
}

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	families, err := readMetrics(url)
	require.NoError(t, err)
	return families
}

func readMetrics(url string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
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

// documentedMetrics are the metric names in the monitoring page's metrics table.
func documentedMetrics(t *testing.T) []string {
	t.Helper()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	raw, err := os.ReadFile(root + "/docs/monitoring.md")
	require.NoError(t, err)
	section := string(raw)[strings.Index(string(raw), "## Metrics"):]
	section = section[:strings.Index(section, "\n## ")]
	// The seeder mode's own metrics are the Inventory tests' to check:
	// this controller runs in the equinix mode.
	if i := strings.Index(section, "\n### In `--mode seeder`"); i >= 0 {
		section = section[:i]
	}
	var names []string
	for _, m := range regexp.MustCompile("`((?:equinix_addon|lasso_controller|workqueue)_[a-z_*]+)`").FindAllStringSubmatch(section, -1) {
		names = append(names, m[1])
	}
	require.NotEmpty(t, names)
	return names
}

// gauge sums a family's gauges whose label has the value.
func gauge(f *dto.MetricFamily, label, value string) float64 {
	var sum float64
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

func clusterID(t *testing.T, env *framework.Env) string {
	ns, err := env.Kube.CoreV1().Namespaces().Get(env.Ctx, "kube-system", metav1.GetOptions{})
	require.NoError(t, err)
	return string(ns.UID)
}

// poolGauges are the gauges a pool's series carry only while it exists (and,
// for the oldest deletion, only while one of its servers is being deleted).
var poolGauges = map[string]bool{
	"equinix_addon_instances": true, "equinix_addon_pool_phase": true,
	"equinix_addon_oldest_deletion_timestamp_seconds": true,
}

// sampleWhileRunning scrapes the binary until stop is called and returns the
// largest total each pool gauge reached.
func sampleWhileRunning(url string) (stop func() map[string]float64) {
	peak := map[string]float64{}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if resp, err := http.Get(url); err == nil {
				parser := expfmt.NewTextParser(model.UTF8Validation)
				families, perr := parser.TextToMetricFamilies(resp.Body)
				resp.Body.Close()
				for name := range poolGauges {
					if f, ok := families[name]; perr == nil && ok {
						peak[name] = max(peak[name], total(f))
					}
				}
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() map[string]float64 {
		close(done)
		<-finished
		return peak
	}
}

// TestDocumentedMetricsAreLive runs a pool through creation, a failed
// provision, a remediation, an orphan and its deletion, then finds every
// documented metric on the binary's /metrics with a non-zero value.
func TestDocumentedMetricsAreLive(t *testing.T) {
	env := framework.New(t, &shared, framework.Options{NoController: true, RateLimit: 1_000_000})
	// The VIP is an Elastic IP of the project: the addon makes its ElasticIP.
	env.ReserveVIP("sg")
	env.IngressExpose()
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
	stopSampling := sampleWhileRunning(addon.MetricsURL())
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
	powered := func(action hardwarev1.PowerAction) func() bool {
		return func() bool {
			i, err := env.Client.EquinixV1().Instances().Get(env.Ctx, inst.Name, metav1.GetOptions{})
			return err == nil && i.Status.LastPowerAction != nil && i.Status.LastPowerAction.Action == action &&
				i.Status.LastPowerAction.Result == hardwarev1.PowerResultSucceeded
		}
	}
	env.Eventually(powered(hardwarev1.PowerActionOff), time.Minute, "the power-off did not complete")
	_, err = env.Client.EquinixV1().Instances().Patch(env.Ctx, inst.Name, types.MergePatchType,
		[]byte(`{"spec":{"powerState":"on"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	env.Eventually(powered(hardwarev1.PowerActionOn), time.Minute, "the power-on did not complete")

	// A remediation: the node has not been Ready for two minutes.
	require.NoError(t, env.Agent.SetNodeNotReady(env.Ctx, inst.Name, time.Now().Add(-2*time.Minute)))
	env.Eventually(func() bool {
		insts := env.Instances(pool.Name)
		return len(insts) == 1 && insts[0].Name != inst.Name && insts[0].Status.Status == equinixv1.PhaseManaged
	}, 2*time.Minute, "the unhealthy server was not replaced")

	// An orphan of this cluster, deleted after its grace period.
	cfg := metalv1.NewConfiguration()
	cfg.Servers = metalv1.ServerConfigurations{{URL: env.SimURL}}
	cfg.AddDefaultHeader("X-Auth-Token", framework.MetalToken)
	in := metalv1.DeviceCreateInMetroInput{Metro: "da", Plan: "c3.small.x86", OperatingSystem: "ubuntu_22_04",
		Hostname: metalv1.PtrString("orphan"), Tags: []string{equinixv1.ClusterTag(clusterID(t, env))}}
	orphan, _, err := metalv1.NewAPIClient(cfg).DevicesApi.CreateDevice(context.Background(), framework.ProjectID).
		CreateDeviceRequest(metalv1.CreateDeviceRequest{DeviceCreateInMetroInput: &in}).Execute()
	require.NoError(t, err)
	env.Eventually(func() bool {
		d, ok := env.Sim.Device(orphan.GetId())
		return !ok || d.GetState() == metalv1.DEVICESTATE_DEPROVISIONING
	}, time.Minute, "the orphan was not deleted")

	// kube-vip names the pool's server: the VIP's Elastic IP moves there.
	env.DeleteElasticIPsAtEnd()
	server := env.Instances(pool.Name)[0].Name
	require.NoError(t, env.SetVIPHost(server))
	env.Eventually(func() bool {
		e := env.ElasticIP(equinixv1.VIPElasticIPName)
		return e != nil && e.Status.Status == equinixv1.ElasticIPPhaseAssigned && e.Status.NodeName == server
	}, time.Minute, "the VIP's Elastic IP did not follow kube-vip")

	// The ElasticIP's metrics are published once its status is stored, a
	// moment after the status waited for: read them once they are there.
	var elasticIPMetrics []string
	for _, name := range documentedMetrics(t) {
		if strings.HasPrefix(name, "equinix_addon_elasticip_") {
			elasticIPMetrics = append(elasticIPMetrics, name)
		}
	}
	var managedDuringRun map[string]*dto.MetricFamily
	assert.Eventually(t, func() bool {
		families, err := readMetrics(addon.MetricsURL())
		if err != nil {
			return false
		}
		managedDuringRun = families
		for _, name := range elasticIPMetrics {
			if total(families[name]) == 0 {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, "the ElasticIP's metrics %v were not published", elasticIPMetrics)
	managed := gauge(managedDuringRun["equinix_addon_instances"], "phase", equinixv1.PhaseManaged)
	assert.Equal(t, 1.0, managed, "instances by phase")
	assert.Equal(t, 1.0, gauge(managedDuringRun["equinix_addon_pool_phase"], "phase", equinixv1.PoolPhaseReady), "pool phase")

	env.DeletePoolAndWait(pool.Name)
	peaks := stopSampling()
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
		if poolGauges[name] {
			// Sampled while the pool ran: its series go with it.
			assert.Greater(t, peaks[name], 0.0, "documented metric %s was never non-zero while the pool ran", name)
			assert.NotContains(t, families, name, "the deleted pool's %s series stay", name)
			continue
		}
		f, ok := families[name]
		if strings.HasPrefix(name, "equinix_addon_elasticip_") {
			// Read while the pool ran: with its server gone, kube-vip's
			// node is gone too and the Elastic IP has nothing to follow.
			f, ok = managedDuringRun[name]
		}
		if !assert.True(t, ok, "documented metric %s is not exported", name) {
			continue
		}
		assert.Greater(t, total(f), 0.0, "documented metric %s is zero", name)
	}
	addon.AssertNoSecretLeaks()
}
