// Package metrics owns the Prometheus registry the addon serves on /metrics.
package metrics

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	lassometrics "github.com/rancher/lasso/pkg/metrics"
)

var (
	registry = prometheus.NewRegistry()
	once     sync.Once
)

// Registerer is where the addon's own collectors register.
func Registerer() prometheus.Registerer { return registry }

// Handler serves every registered metric. The first call also registers lasso's
// handler and workqueue metrics and the process collectors; lasso keeps that
// switch in a package variable, so it must be flipped once per process.
func Handler() http.Handler {
	once.Do(func() {
		lassometrics.MustRegisterWithWorkqueue(registry)
		registry.MustRegister(
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		)
	})
	return promhttp.HandlerFor(registry, promhttp.HandlerOpts{Registry: registry})
}
