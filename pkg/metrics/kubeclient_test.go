package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Requests through client-go are counted with their wait in its
// client-side limit.
func TestKubeClientWaitIsObserved(t *testing.T) {
	RegisterKubeClientMetrics()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"x"}}`))
	}))
	defer srv.Close()
	// Ten requests a second and a burst of one: after the first, each
	// request waits about 100 ms for its token.
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: 10, Burst: 1})
	require.NoError(t, err)
	count, sum := getWaits(t)
	for range 3 {
		_, err := client.CoreV1().Namespaces().Get(context.Background(), "x", metav1.GetOptions{})
		require.NoError(t, err)
	}
	after, afterSum := getWaits(t)
	assert.Equal(t, uint64(3), after-count, "every request is observed")
	assert.Greater(t, afterSum-sum, 0.1, "two waits of about 100 ms each")
}

func getWaits(t *testing.T) (uint64, float64) {
	t.Helper()
	var m dto.Metric
	require.NoError(t, KubeClientWait.WithLabelValues("GET").(prometheus.Metric).Write(&m))
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}
