package metal

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Values of the code label besides HTTP status codes.
const (
	codeError     = "error"
	codeThrottled = "throttled"
)

// metrics are the Metal API collectors of one Provider.
type metrics struct {
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	remaining prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "equinix_addon_metal_api_requests_total",
			Help: "Metal API requests by operation and HTTP status code; code is \"error\" when no answer came back and \"throttled\" when the client refused the call while rate limited.",
		}, []string{"operation", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "equinix_addon_metal_api_request_duration_seconds",
			Help:    "Latency of Metal API requests by operation.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"operation"}),
		remaining: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "equinix_addon_metal_api_rate_limit_remaining",
			Help: "X-RateLimit-Remaining of the last Metal API answer that carried it.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.requests, err = register(reg, m.requests); err != nil {
		return nil, err
	}
	if m.duration, err = register(reg, m.duration); err != nil {
		return nil, err
	}
	if m.remaining, err = register(reg, m.remaining); err != nil {
		return nil, err
	}
	return m, nil
}

// register adopts a collector registered earlier on the same registry, so a
// second Provider (tests, a restarted controller) shares the series.
func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("registering Metal API metrics: %w", err)
}

// observe records one request that reached the network (or failed to).
func (m *metrics) observe(op string, resp *http.Response, elapsed time.Duration) {
	code := codeError
	if resp != nil {
		code = strconv.Itoa(resp.StatusCode)
		if v := resp.Header.Get("X-RateLimit-Remaining"); v != "" {
			if n, err := strconv.ParseFloat(v, 64); err == nil {
				m.remaining.Set(n)
			}
		}
	}
	m.requests.WithLabelValues(op, code).Inc()
	m.duration.WithLabelValues(op).Observe(elapsed.Seconds())
}

// throttled records a call refused before it reached the network.
func (m *metrics) throttled(op string) {
	m.requests.WithLabelValues(op, codeThrottled).Inc()
}
