package main

import (
	"fmt"
	"io"
	"math"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metric names the benchmark reads from the controller's /metrics.
const (
	metricReconcileTime = "lasso_controller_reconcile_time_seconds"
	metricMetalRequests = "equinix_addon_metal_api_requests_total"
	metricMetalDuration = "equinix_addon_metal_api_request_duration_seconds"
	metricClientWait    = "equinix_addon_kube_client_rate_limiter_wait_seconds"
	metricCPUSeconds    = "process_cpu_seconds_total"
	metricLastPoll      = "equinix_addon_hardware_last_poll_timestamp_seconds"
	labelController     = "controller_name"
	labelHandler        = "handler_name"
)

// metrics is one scrape of a Prometheus text endpoint.
type metrics map[string]*dto.MetricFamily

func parseMetrics(r io.Reader) (metrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return fams, nil
}

func labelsOf(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// labelFilter selects series by their labels; nil selects every series.
type labelFilter func(map[string]string) bool

// sum adds up the counter, gauge or untyped values of name whose labels
// match.
func (ms metrics) sum(name string, match labelFilter) float64 {
	var total float64
	for _, m := range ms[name].GetMetric() {
		if match != nil && !match(labelsOf(m)) {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		case m.Untyped != nil:
			total += m.GetUntyped().GetValue()
		}
	}
	return total
}

// sumBy adds up a counter per value of one label.
func (ms metrics) sumBy(name, label string, match labelFilter) map[string]float64 {
	out := map[string]float64{}
	for _, m := range ms[name].GetMetric() {
		l := labelsOf(m)
		if match != nil && !match(l) {
			continue
		}
		out[l[label]] += m.GetCounter().GetValue()
	}
	return out
}

// histogram merges the histograms of name whose labels match. Series that
// share bucket bounds (lasso's all use the default buckets) add up bucket by
// bucket.
func (ms metrics) histogram(name string, match labelFilter) histogram {
	h := histogram{buckets: map[float64]float64{}}
	for _, m := range ms[name].GetMetric() {
		if match != nil && !match(labelsOf(m)) {
			continue
		}
		mh := m.GetHistogram()
		h.count += float64(mh.GetSampleCount())
		h.sum += mh.GetSampleSum()
		for _, b := range mh.GetBucket() {
			h.buckets[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
	}
	return h
}

// histogram holds cumulative bucket counts by upper bound.
type histogram struct {
	buckets map[float64]float64
	count   float64
	sum     float64
}

// minus is what was observed between an earlier scrape and this one.
func (h histogram) minus(earlier histogram) histogram {
	out := histogram{buckets: map[float64]float64{}, count: h.count - earlier.count, sum: h.sum - earlier.sum}
	for le, c := range h.buckets {
		out.buckets[le] = c - earlier.buckets[le]
	}
	return out
}

// quantile estimates the q-quantile as Prometheus' histogram_quantile does:
// linear interpolation inside the bucket that holds the rank. Its precision
// is the bucket width; a rank in the +Inf bucket answers the highest finite
// bound. NaN means no observations.
func (h histogram) quantile(q float64) float64 {
	if h.count <= 0 {
		return math.NaN()
	}
	bounds := make([]float64, 0, len(h.buckets)+1)
	for le := range h.buckets {
		bounds = append(bounds, le)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 || !math.IsInf(bounds[len(bounds)-1], 1) {
		bounds = append(bounds, math.Inf(1))
	}
	cum := func(le float64) float64 {
		if math.IsInf(le, 1) {
			return h.count
		}
		return h.buckets[le]
	}
	rank := q * h.count
	lower, below := 0.0, 0.0
	for _, le := range bounds {
		c := cum(le)
		if c >= rank {
			if math.IsInf(le, 1) {
				return lower
			}
			if c == below {
				return le
			}
			return lower + (le-lower)*(rank-below)/(c-below)
		}
		lower, below = le, c
	}
	return lower
}

// mean is the average observation.
func (h histogram) mean() float64 {
	if h.count <= 0 {
		return math.NaN()
	}
	return h.sum / h.count
}
