package release

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/helmtest"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

// uiInventory is what Harvester's UI writes for a host's Out-of-Band Access
// (harvester-ui-extension v1.8.0, edit/harvesterhci.io.host/HarvesterSeeder.vue):
// here with Insecure TLS ticked, as the form has no CA field.
const uiInventory = `apiVersion: metal.harvesterhci.io/v1alpha1
kind: Inventory
metadata:
  name: %[1]s
  namespace: harvester-system
  annotations:
    metal.harvesterhci.io/local-node-name: %[1]s
    metal.harvesterhci.io/local-inventory: "true"
spec:
  baseboardSpec:
    connection:
      authSecretRef: {namespace: %[2]s, name: %[1]s-bmc}
      insecureTLS: true
      host: %[3]s
      port: %[4]d
  events: {enabled: true, pollingInterval: 1h}
  primaryDisk: ""
  managementInterfaceMacAddress: ""
`

// lockedBuffer is the controller's output, written by its process while
// the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runSeederDeployment runs the controller binary as the harvester-seeder
// release's Deployment would run it (no pod runs on the test apiserver):
// the container's environment, field references resolved as the kubelet
// resolves them, under the token of the Deployment's ServiceAccount, so
// with exactly the release's RBAC and no Metal Secret. A node's Inventory
// written as the UI writes it, its Secret in another namespace without a
// label, reaches inventoryNodeReady against the Redfish responder.
func runSeederDeployment(ctx context.Context, t *testing.T, c *cluster.Cluster, k8s kubernetes.Interface) {
	t.Helper()
	d, err := k8s.AppsV1().Deployments(helmtest.Namespace).Get(ctx, seederChart, metav1.GetOptions{})
	require.NoError(t, err)
	ctr := d.Spec.Template.Spec.Containers[0]
	_, kubeconfig, err := c.ServiceAccountConfig(ctx, helmtest.Namespace, d.Spec.Template.Spec.ServiceAccountName)
	require.NoError(t, err)
	env := []string{"PATH=/usr/bin:/bin"}
	for _, e := range ctr.Env {
		value := e.Value
		if e.ValueFrom != nil {
			require.NotNil(t, e.ValueFrom.FieldRef, "%s comes from something other than the pod", e.Name)
			value = map[string]string{"metadata.namespace": helmtest.Namespace, "metadata.name": seederChart + "-test"}[e.ValueFrom.FieldRef.FieldPath]
		}
		env = append(env, e.Name+"="+value)
	}
	// The pod's ports, on the test's host: ones the system picks as the binary
	// binds them. A port picked free here and bound after the build may be
	// another process's by then, and the binary would exit at start.
	env = append(env, "HTTP_ADDRESS=127.0.0.1:0", "IPXE_ADDRESS=127.0.0.1:0", "KUBECONFIG="+kubeconfig)

	bin := buildController(t)
	out := &lockedBuffer{}
	cmd := exec.Command(bin)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})

	const node, secrets, password = "seeder-release-node", "seeder-release-bmc", "Release-bmc-pw-9"
	sim := bmcsim.New(bmcsim.Options{Username: "admin", Password: password})
	srv, err := bmcsim.NewServer(sim, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	_, err = k8s.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = k8s.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) })
	ensureNamespace(ctx, t, k8s, secrets)
	_, err = k8s.CoreV1().Secrets(secrets).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secrets, Name: node + "-bmc"},
		Data: map[string][]byte{"username": []byte("admin"), "password": []byte(password)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c.RESTConfig)
	require.NoError(t, err)
	invs := dyn.Resource(inventoryGVR).Namespace(seederv1alpha1.InventoryNamespace)
	obj := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(fmt.Sprintf(uiInventory, node, secrets, srv.Host, srv.Port)), &obj.Object))
	_, err = invs.Create(ctx, obj, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
	require.NoError(t, err)
	t.Cleanup(func() { _ = invs.Delete(context.Background(), node, metav1.DeleteOptions{}) })

	var status string
	require.Eventually(t, func() bool {
		got, err := invs.Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false
		}
		status, _, _ = unstructured.NestedString(got.Object, "status", "status")
		return status == string(seederv1alpha1.InventoryNodeReady)
	}, 2*time.Minute, 200*time.Millisecond, "the Inventory is %q, not inventoryNodeReady; the controller's output:\n%s", status, out)
	require.NotContains(t, out.String(), password)
}

// buildController builds the controller from this checkout into the
// test's folder.
func buildController(t *testing.T) string {
	t.Helper()
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "harvester-equinix-addon")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "building the controller:\n%s", out)
	return bin
}
