package framework

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/metal"
	"github.com/harvester/harvester-equinix-addon/tests/harvestercluster"
)

// apply creates or replaces a ConfigMap or Secret.
func (e *Env) apply(obj interface{}) {
	var err error
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		err = harvestercluster.ApplyConfigMap(e.Ctx, e.Kube, o)
	case *corev1.Secret:
		err = harvestercluster.ApplySecret(e.Ctx, e.Kube, o)
	default:
		err = fmt.Errorf("apply: unsupported %T", obj)
	}
	require.NoError(e.T, err)
}

// SetSecretData replaces the credentials Secret's data.
func (e *Env) SetSecretData(data map[string]string) {
	raw := map[string][]byte{}
	for k, v := range data {
		raw[k] = []byte(v)
	}
	e.apply(CredentialsSecret(SecretName, raw))
}

// CredentialsSecret is a credentials Secret as an operator creates it: in
// the addon's namespace, labelled for the addon to read.
func CredentialsSecret(name string, data map[string][]byte) *corev1.Secret {
	return harvestercluster.CredentialsSecret(Namespace, name, data)
}

// MetalClient is a client of the simulator for project, as the tests' own
// eyes on Equinix Metal (no client-side rate limit).
func (e *Env) MetalClient(token, project string) metal.Client {
	e.T.Helper()
	provider, err := metal.NewProvider(metal.Options{BaseURL: e.SimURL, RequestsPerSecond: -1})
	require.NoError(e.T, err)
	client, err := provider.Client(metal.Credentials{Token: token, ProjectID: project})
	require.NoError(e.T, err)
	return client
}

// SetServerVersion sets the cluster's Harvester version (Setting
// server-version), as an upgrade of the cluster would.
func SetServerVersion(e *Env, version string) error {
	dyn, err := dynamic.NewForConfig(e.Cluster.RESTConfig)
	if err != nil {
		return err
	}
	patch := []byte(fmt.Sprintf(`{"value":%q}`, version))
	_, err = dyn.Resource(schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "settings"}).
		Patch(e.Ctx, harvester.ServerVersionSettingName, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// OrphanDevice creates a device tagged with this cluster (and a pool that
// does not exist) that no Instance claims, as a create that landed after its
// Instance was gone leaves one.
func OrphanDevice(t testing.TB, e *Env, hostname string) string {
	t.Helper()
	ns, err := e.Kube.CoreV1().Namespaces().Get(e.Ctx, "kube-system", metav1.GetOptions{})
	require.NoError(t, err)
	dev, err := e.MetalClient(MetalToken, ProjectID).CreateDevice(e.Ctx, metal.CreateDeviceRequest{
		Hostname: hostname, Plan: "c3.small.x86", Metro: "sg", BillingCycle: "hourly",
		OperatingSystem: "custom_ipxe", IPXEScriptURL: "http://example.invalid/none.ipxe",
		Tags: []string{equinixv1.ClusterTag(string(ns.UID)), equinixv1.PoolTag("gone-" + hostname)},
	})
	require.NoError(t, err)
	return dev.ID
}
