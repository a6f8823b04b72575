package apivalidation

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
)

// kubectlGet runs the real kubectl, as a user would, and returns its lines split
// into columns.
func kubectlGet(t *testing.T, args ...string) [][]string {
	t.Helper()
	c := shared.Require(t)
	out, err := exec.Command(filepath.Join(cluster.DefaultBinDir(), "kubectl"),
		append([]string{"--kubeconfig", c.Kubeconfig, "get"}, args...)...).CombinedOutput()
	require.NoError(t, err, string(out))
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		rows = append(rows, strings.Fields(line))
	}
	return rows
}

func TestKubectlColumnsMatchTheSeed(t *testing.T) {
	ctx, client := setup(t)
	pool := parsePool(t, seedSample)
	pool.Name = "columns-pool"
	created, err := client.EquinixV1().InstancePools().Create(ctx, pool, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.EquinixV1().InstancePools().Delete(ctx, created.Name, metav1.DeleteOptions{}) })
	created.Status = equinixv1.InstancePoolStatus{Status: equinixv1.PoolPhaseReady, Ready: 1, Requested: 1, Updated: 1, Available: 1}
	_, err = client.EquinixV1().InstancePools().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)

	inst := &equinixv1.Instance{
		ObjectMeta: metav1.ObjectMeta{Name: "columns-pool-zaoolitj"},
		Spec:       equinixv1.InstanceSpec{PoolName: pool.Name, InstanceTemplate: pool.Spec.InstanceTemplate},
	}
	ci, err := client.EquinixV1().Instances().Create(ctx, inst, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.EquinixV1().Instances().Delete(ctx, ci.Name, metav1.DeleteOptions{}) })
	ci.Status = equinixv1.InstanceStatus{Status: equinixv1.PhaseManaged, InstanceID: "1c6106a0-13e6-44fa-af2c-bec67d4b6c65",
		Server:   "1c6106a0-13e6-44fa-af2c-bec67d4b6c65",
		PublicIP: "145.40.73.137", PrivateIP: "10.8.23.5", Address: "10.8.23.5", WaitingFor: "node Ready", ManagementMAC: "0c:c4:7a:29:00:07",
		BootPath: equinixv1.BootPathVirtualMedia}
	_, err = client.EquinixV1().Instances().UpdateStatus(ctx, ci, metav1.UpdateOptions{})
	require.NoError(t, err)

	rows := kubectlGet(t, "instancepool", "columns-pool")
	require.Len(t, rows, 2)
	// The seed's columns first, then the rollout's, as `kubectl get
	// deployment` shows them.
	assert.Equal(t, []string{"NAME", "STATUS", "READY", "REQUESTED", "UP-TO-DATE", "AVAILABLE", "AGE"}, rows[0])
	require.Len(t, rows[1], 7)
	assert.Equal(t, []string{"columns-pool", "ready", "1", "1", "1", "1"}, rows[1][:6])

	rows = kubectlGet(t, "instance", "columns-pool-zaoolitj")
	require.Len(t, rows, 2)
	// Which server, at which address, waiting for what: the columns that
	// serve both providers (an owned server has no public or private IP of
	// a provider's).
	assert.Equal(t, []string{"NAME", "STATUS", "SERVER", "ADDRESS", "WAITING", "AGE"}, rows[0])
	assert.Equal(t, []string{"columns-pool-zaoolitj", "managed", "1c6106a0-13e6-44fa-af2c-bec67d4b6c65", "10.8.23.5", "node"}, rows[1][:5])
	rows = kubectlGet(t, "instance", "columns-pool-zaoolitj", "-o", "wide")
	require.Len(t, rows, 2)
	assert.Equal(t, []string{"NAME", "STATUS", "SERVER", "ADDRESS", "WAITING", "AGE", "MAC", "PUBLICIP", "PRIVATEIP", "NODE", "POOL", "POWER", "BOOT"}, rows[0])
	assert.Contains(t, rows[1], "0c:c4:7a:29:00:07")
	assert.Contains(t, rows[1], "145.40.73.137")
	assert.Contains(t, rows[1], "VirtualMedia")

	// Both kinds answer together, as in `kubectl get instancepool,instance`.
	rows = kubectlGet(t, "instancepool,instance")
	var headers int
	for _, r := range rows {
		if len(r) > 0 && r[0] == "NAME" {
			headers++
		}
	}
	assert.Equal(t, 2, headers)
}
