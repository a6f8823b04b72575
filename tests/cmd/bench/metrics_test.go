package main

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sampleMetrics = `# HELP lasso_controller_reconcile_time_seconds Histogram of the durations per reconciliation per controller
# TYPE lasso_controller_reconcile_time_seconds histogram
lasso_controller_reconcile_time_seconds_bucket{controller_name="equinix.harvesterhci.io/v1, Resource=instances",ctx="",handler_name="instance-provision",has_error="false",le="0.005"} 10
lasso_controller_reconcile_time_seconds_bucket{controller_name="equinix.harvesterhci.io/v1, Resource=instances",ctx="",handler_name="instance-provision",has_error="false",le="0.01"} 30
lasso_controller_reconcile_time_seconds_bucket{controller_name="equinix.harvesterhci.io/v1, Resource=instances",ctx="",handler_name="instance-provision",has_error="false",le="0.1"} 90
lasso_controller_reconcile_time_seconds_bucket{controller_name="equinix.harvesterhci.io/v1, Resource=instances",ctx="",handler_name="instance-provision",has_error="false",le="+Inf"} 100
lasso_controller_reconcile_time_seconds_sum{controller_name="equinix.harvesterhci.io/v1, Resource=instances",ctx="",handler_name="instance-provision",has_error="false"} 4
lasso_controller_reconcile_time_seconds_count{controller_name="equinix.harvesterhci.io/v1, Resource=instances",ctx="",handler_name="instance-provision",has_error="false"} 100
lasso_controller_reconcile_time_seconds_bucket{controller_name="/v1, Resource=nodes",ctx="",handler_name="node-sync",has_error="false",le="0.005"} 5
lasso_controller_reconcile_time_seconds_bucket{controller_name="/v1, Resource=nodes",ctx="",handler_name="node-sync",has_error="false",le="0.01"} 5
lasso_controller_reconcile_time_seconds_bucket{controller_name="/v1, Resource=nodes",ctx="",handler_name="node-sync",has_error="false",le="0.1"} 5
lasso_controller_reconcile_time_seconds_bucket{controller_name="/v1, Resource=nodes",ctx="",handler_name="node-sync",has_error="false",le="+Inf"} 5
lasso_controller_reconcile_time_seconds_sum{controller_name="/v1, Resource=nodes",ctx="",handler_name="node-sync",has_error="false"} 0.01
lasso_controller_reconcile_time_seconds_count{controller_name="/v1, Resource=nodes",ctx="",handler_name="node-sync",has_error="false"} 5
# HELP equinix_addon_metal_api_requests_total Metal API requests.
# TYPE equinix_addon_metal_api_requests_total counter
equinix_addon_metal_api_requests_total{code="200",operation="GetDevice"} 7
equinix_addon_metal_api_requests_total{code="429",operation="GetDevice"} 2
equinix_addon_metal_api_requests_total{code="throttled",operation="CreateDevice"} 3
`

func parseSample(t *testing.T, text string) metrics {
	t.Helper()
	ms, err := parseMetrics(strings.NewReader(text))
	require.NoError(t, err)
	return ms
}

func TestParseAndSum(t *testing.T) {
	ms := parseSample(t, sampleMetrics)
	assert.InDelta(t, 12, ms.sum(metricMetalRequests, nil), 1e-9)
	assert.InDelta(t, 3, ms.sum(metricMetalRequests, isThrottledCode), 1e-9)
	assert.Equal(t, map[string]float64{"GetDevice": 9, "CreateDevice": 3}, ms.sumBy(metricMetalRequests, "operation", nil))
	assert.Equal(t, []string{"instances", "nodes"}, controllerKinds(ms))
	assert.InDelta(t, 0, ms.sum("no_such_metric", nil), 1e-9)

	_, err := parseMetrics(strings.NewReader("not a metric line {"))
	assert.Error(t, err)
}

func TestHistogramQuantile(t *testing.T) {
	ms := parseSample(t, sampleMetrics)
	inst := ms.histogram(metricReconcileTime, func(l map[string]string) bool { return kindOf(l[labelController]) == instancesResource })
	all := ms.histogram(metricReconcileTime, nil)
	cases := []struct {
		name string
		h    histogram
		q    float64
		want float64
	}{
		// rank 5 of 100 lies in the first bucket (10 observations, 0-5ms).
		{"inside the first bucket", inst, 0.05, 0.0025},
		// rank 50: 20 of the 60 observations in 10-100ms.
		{"interpolated", inst, 0.5, 0.01 + 0.09*20/60},
		{"in the +Inf bucket answers the highest bound", inst, 0.99, 0.1},
		// merged: 105 observations, 15 at or below 5ms.
		{"merged series add up", all, 15.0 / 105, 0.005},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, tc.h.quantile(tc.q), 1e-9)
		})
	}
	assert.True(t, math.IsNaN(histogram{buckets: map[float64]float64{}}.quantile(0.5)), "no observations")
	assert.InDelta(t, 0.04, inst.mean(), 1e-9)
}

func TestHistogramMinus(t *testing.T) {
	before := histogram{buckets: map[float64]float64{0.005: 10, 0.01: 10}, count: 10, sum: 0.02}
	after := histogram{buckets: map[float64]float64{0.005: 10, 0.01: 30}, count: 30, sum: 0.2}
	d := after.minus(before)
	assert.InDelta(t, 20, d.count, 1e-9)
	assert.InDelta(t, 0.18, d.sum, 1e-9)
	assert.Equal(t, map[float64]float64{0.005: 0, 0.01: 20}, d.buckets)
	// Every new observation is in the 5-10ms bucket.
	assert.InDelta(t, 0.0075, d.quantile(0.5), 1e-9)
}

func TestKindOf(t *testing.T) {
	assert.Equal(t, "instances", kindOf("equinix.harvesterhci.io/v1, Resource=instances"))
	assert.Equal(t, "plain", kindOf("plain"))
}

func TestInstanceWrites(t *testing.T) {
	const series = `# TYPE apiserver_request_total counter
apiserver_request_total{code="201",group="equinix.harvesterhci.io",resource="instances",subresource="",verb="POST",version="v1"} %d
apiserver_request_total{code="200",group="equinix.harvesterhci.io",resource="instances",subresource="status",verb="PUT",version="v1"} %d
apiserver_request_total{code="200",group="equinix.harvesterhci.io",resource="instances",subresource="",verb="GET",version="v1"} %d
apiserver_request_total{code="200",group="",resource="nodes",subresource="",verb="UPDATE",version="v1"} %d
`
	before := parseSample(t, fmt.Sprintf(series, 1, 2, 3, 4))
	after := parseSample(t, fmt.Sprintf(series, 11, 42, 103, 54))
	assert.Equal(t, map[string]float64{"create": 10, "update status": 40}, instanceWrites(after, before))
}
