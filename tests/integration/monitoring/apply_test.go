package monitoring

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/helmtest"
	"github.com/harvester/harvester-equinix-addon/tests/upstream"
)

// TestMonitoringObjectsOnTheAPIServer applies the rendered ServiceMonitor,
// PrometheusRule, metrics Service and dashboard ConfigMap to a real apiserver
// that has the Prometheus Operator's own CRDs (at the version scripts/versions
// pins), whose schemas check every field as rancher-monitoring's cluster would.
func TestMonitoringObjectsOnTheAPIServer(t *testing.T) {
	c := shared.Require(t)
	ctx := context.Background()
	root := helmtest.Root(t)
	dir := t.TempDir()
	for _, f := range []string{"monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml"} {
		path, err := upstream.PrometheusOperatorCRD(root, f)
		require.NoError(t, err)
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), raw, 0o600))
	}
	require.NoError(t, cluster.InstallCRDs(ctx, c.RESTConfig, dir))
	k8s, err := kubernetes.NewForConfig(c.RESTConfig)
	require.NoError(t, err)
	for _, ns := range []string{helmtest.Namespace, "cattle-dashboards"} {
		_, err := k8s.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}

	m := helmtest.Render(t, monitoringOn...)
	var objs helmtest.Manifests
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule", "ConfigMap", "Service"} {
		objs = append(objs, m.OfKind(kind)...)
	}
	_, err = helmtest.Kubectl(c, objs.YAML(t), "apply", "--server-side", "--validate=strict", "--field-manager=monitoring-test", "-f", "-")
	require.NoError(t, err)

	out, err := helmtest.Kubectl(c, "", "get", "prometheusrules,servicemonitors", "-n", helmtest.Namespace, "-o", "name")
	require.NoError(t, err)
	assert.Contains(t, out, "prometheusrule.monitoring.coreos.com/"+ruleName)
	assert.Contains(t, out, "servicemonitor.monitoring.coreos.com/"+helmtest.Release)
	dash, err := k8s.CoreV1().ConfigMaps("cattle-dashboards").Get(ctx, dashboardName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1", dash.Labels["grafana_dashboard"])

	// The ServiceMonitor selects the metrics Service, not the iPXE one, and
	// scrapes a port that Service has.
	sm := m.Find("ServiceMonitor", helmtest.Release)
	sel, _, err := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	require.NoError(t, err)
	selected := 0
	for _, svc := range m.OfKind("Service") {
		if !subset(sel, svc.GetLabels()) {
			continue
		}
		selected++
		assert.Equal(t, helmtest.Release+"-metrics", svc.GetName())
		ports, _, err := unstructured.NestedSlice(svc.Object, "spec", "ports")
		require.NoError(t, err)
		endpoints, _, err := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		require.NoError(t, err)
		require.Len(t, endpoints, 1)
		port := endpoints[0].(map[string]interface{})["port"]
		found := false
		for _, p := range ports {
			found = found || p.(map[string]interface{})["name"] == port
		}
		assert.True(t, found, "the metrics Service has no port named %v", port)
	}
	assert.Equal(t, 1, selected)

	// A typo in a rule's duration is refused by the operator's CRD schema.
	bad := m.Find("PrometheusRule", ruleName).DeepCopy()
	bad.SetName("bad-duration")
	groups, _, _ := unstructured.NestedSlice(bad.Object, "spec", "groups")
	rules := groups[0].(map[string]interface{})["rules"].([]interface{})
	rules[0].(map[string]interface{})["for"] = "15 minutes"
	require.NoError(t, unstructured.SetNestedSlice(bad.Object, groups, "spec", "groups"))
	_, err = helmtest.Kubectl(c, helmtest.Manifests{bad}.YAML(t), "apply", "--server-side", "--field-manager=monitoring-test", "-f", "-")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "for")
}

func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}
