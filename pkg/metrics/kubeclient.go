package metrics

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// KubeClientWait is how long the controller's kube-apiserver requests
// waited in the client-side limit (--kube-api-qps and --kube-api-burst)
// before they were sent. A fleet provisioning at once fills that limit on
// purpose, to spare the apiserver; this is where the wait shows, so that a
// slow reconcile can be told from a slow apiserver.
var KubeClientWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "equinix_addon_kube_client_rate_limiter_wait_seconds",
	Help:    "Time the controller's kube-apiserver requests waited in its client-side rate limit, by verb.",
	Buckets: []float64{0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
}, []string{"verb"})

var registerClientMetrics sync.Once

// RegisterKubeClientMetrics makes client-go report the waits in its
// client-side limit to KubeClientWait. client-go keeps one such hook per
// process and takes only the first registration.
func RegisterKubeClientMetrics() {
	registerClientMetrics.Do(func() {
		registry.MustRegister(KubeClientWait)
		clientmetrics.Register(clientmetrics.RegisterOpts{RateLimiterLatency: limiterWait{}})
	})
}

// limiterWait adapts the histogram to client-go's latency hook; the URL
// is left out, as it would name every object.
type limiterWait struct{}

func (limiterWait) Observe(_ context.Context, verb string, _ url.URL, latency time.Duration) {
	KubeClientWait.WithLabelValues(verb).Observe(latency.Seconds())
}
