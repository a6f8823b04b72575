package chart

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/harvester/harvester-equinix-addon/pkg/app"
)

// controllerEnvVars is every environment variable the controller reads, taken
// from its own flag definitions so that a new flag cannot be forgotten here.
func controllerEnvVars(t *testing.T) []string {
	t.Helper()
	var vars []string
	for _, f := range app.New().Flags {
		df, ok := f.(cli.DocGenerationFlag)
		require.True(t, ok, "flag %v has no environment variables", f.Names())
		require.NotEmpty(t, df.GetEnvVars(), "flag %v has no environment variable", f.Names())
		vars = append(vars, df.GetEnvVars()...)
	}
	sort.Strings(vars)
	return vars
}

func hasEnv(c corev1.Container, name string) bool {
	return slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// envCases are renderings and the controller variables each leaves unset on
// purpose. Everything else the controller reads must be in the Deployment.
// BOOT_LOADERS_DIR is never set: the container image ships the boot loaders
// at the controller's default folder.
var envCases = []struct {
	name  string
	args  []string
	unset []string
}{
	{
		name: "defaults",
		// In-cluster config; the rest are empty by default and the controller
		// discovers them.
		unset: []string{"KUBECONFIG", "BOOT_LOADERS_DIR", "CLUSTER_ID", "CLUSTER_URL", "RANCHERD_CONFIG", "IPXE_PUBLIC_URL", "ARTIFACTS_MIRROR", "OWNED_POOLS", "OWNED_THREADS"},
	},
	{
		name:  "every option on",
		args:  []string{"--values", testdata("all-on.yaml")},
		unset: []string{"KUBECONFIG", "BOOT_LOADERS_DIR", "OWNED_POOLS", "OWNED_THREADS"},
	},
	{
		name:  "iPXE Service inside the cluster only",
		args:  []string{"--set", "ipxe.service.type=ClusterIP", "--set", "ipxe.publicURL=https://ipxe.example.com"},
		unset: []string{"KUBECONFIG", "BOOT_LOADERS_DIR", "CLUSTER_ID", "CLUSTER_URL", "RANCHERD_CONFIG", "IPXE_NODE_PORT", "ARTIFACTS_MIRROR", "OWNED_POOLS", "OWNED_THREADS"},
	},
	{
		name:  "hardware mode",
		args:  hardwareMode,
		unset: []string{"KUBECONFIG", "BOOT_LOADERS_DIR", "CLUSTER_ID", "CLUSTER_URL", "RANCHERD_CONFIG", "IPXE_PUBLIC_URL", "ARTIFACTS_MIRROR", "OWNED_POOLS", "OWNED_THREADS"},
	},
	{
		name:  "hardware mode with pools of servers you own",
		args:  ownedPoolsMode,
		unset: []string{"KUBECONFIG", "BOOT_LOADERS_DIR", "CLUSTER_ID", "CLUSTER_URL", "RANCHERD_CONFIG", "IPXE_PUBLIC_URL", "ARTIFACTS_MIRROR"},
	},
	{
		// Fencing needs the pod's node, which the downward API gives.
		name: "hardware mode with fencing",
		args: append(slices.Clone(hardwareMode), "--set", "hardware.fencing.enabled=true", "--set", "hardware.fencing.maxFenced=2",
			"--set", "hardware.fencing.gracePeriod=10m", "--set", "hardware.fencing.powerOn=true"),
		unset: []string{"KUBECONFIG", "BOOT_LOADERS_DIR", "CLUSTER_ID", "CLUSTER_URL", "RANCHERD_CONFIG", "IPXE_PUBLIC_URL", "ARTIFACTS_MIRROR", "OWNED_POOLS", "OWNED_THREADS"},
	},
}

// downward is what the downward API gives each field the Deployment reads
// from it, in these tests.
var downward = map[string]string{"metadata.namespace": releaseNamespace, "spec.nodeName": "hv-1", "status.podIP": "10.52.0.17"}

func TestDeploymentSetsEveryControllerVariable(t *testing.T) {
	known := controllerEnvVars(t)
	for _, tc := range envCases {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := render(t, tc.args...)
			c := controllerContainer(t, deployment(t, m))
			for _, name := range known {
				if slices.Contains(tc.unset, name) {
					assert.False(t, hasEnv(c, name), "%s should be left to the controller's default", name)
				} else {
					assert.True(t, hasEnv(c, name), "the Deployment does not set %s", name)
				}
			}
			var names []string
			for _, e := range c.Env {
				assert.Contains(t, known, e.Name, "the controller does not read %s", e.Name)
				names = append(names, e.Name)
			}
			assert.Len(t, names, len(slices.Compact(slices.Sorted(slices.Values(names)))), "duplicate variables: %v", names)

			ns := c.Env[slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "NAMESPACE" })]
			require.NotNil(t, ns.ValueFrom, "NAMESPACE comes from the downward API")
			require.NotNil(t, ns.ValueFrom.FieldRef)
			assert.Equal(t, "metadata.namespace", ns.ValueFrom.FieldRef.FieldPath)

			i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "NODE_NAME" })
			require.GreaterOrEqual(t, i, 0, "the Deployment does not set NODE_NAME")
			node := c.Env[i]
			require.NotNil(t, node.ValueFrom, "NODE_NAME comes from the downward API")
			require.NotNil(t, node.ValueFrom.FieldRef)
			assert.Equal(t, "spec.nodeName", node.ValueFrom.FieldRef.FieldPath)

			i = slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "POD_IP" })
			require.GreaterOrEqual(t, i, 0, "the Deployment does not set POD_IP")
			pod := c.Env[i]
			require.NotNil(t, pod.ValueFrom, "POD_IP comes from the downward API")
			require.NotNil(t, pod.ValueFrom.FieldRef)
			assert.Equal(t, "status.podIP", pod.ValueFrom.FieldRef.FieldPath)
		})
	}
}

// TestControllerAcceptsRenderedSettings feeds the rendered variables to the real
// command line: flag parsing and config validation must pass, so the first error
// is the (deliberately unusable) kubeconfig the server then tries to load.
func TestControllerAcceptsRenderedSettings(t *testing.T) {
	known := controllerEnvVars(t)
	badKubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(badKubeconfig, []byte("this is not a kubeconfig: ["), 0o600))
	for _, tc := range envCases {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := render(t, tc.args...)
			c := controllerContainer(t, deployment(t, m))
			for _, name := range known {
				// t.Setenv restores the variable afterwards, also the ones unset here.
				t.Setenv(name, "")
				require.NoError(t, os.Unsetenv(name))
			}
			for _, e := range c.Env {
				value := e.Value
				if e.ValueFrom != nil {
					require.NotNil(t, e.ValueFrom.FieldRef, e.Name)
					require.Contains(t, downward, e.ValueFrom.FieldRef.FieldPath, e.Name)
					value = downward[e.ValueFrom.FieldRef.FieldPath]
				}
				t.Setenv(e.Name, value)
			}
			err := app.New().Run([]string{"harvester-equinix-addon", "--kubeconfig", badKubeconfig})
			require.Error(t, err)
			assert.ErrorContains(t, err, "loading kubeconfig", "the rendered settings were rejected before the controller started")
		})
	}
}
