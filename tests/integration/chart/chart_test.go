package chart

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/harvester/harvester-equinix-addon/tests/cluster"
)

var shared cluster.Shared

func TestMain(m *testing.M) {
	os.Exit(cluster.RunMain(m, cluster.Options{}, &shared))
}

func TestHelmVersionMatchesScripts(t *testing.T) {
	root, err := cluster.RepoRoot()
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(root, "scripts", "versions"))
	require.NoError(t, err)
	m := regexp.MustCompile(`HELM_VERSION="\$\{HELM_VERSION:-([^}]+)\}"`).FindSubmatch(raw)
	require.NotNil(t, m, "HELM_VERSION not found in scripts/versions")
	assert.Equal(t, string(m[1]), helmVersion)
}

func TestChartMetadata(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir(t), "Chart.yaml"))
	require.NoError(t, err)
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Name       string `json:"name"`
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &meta))
	assert.Equal(t, "v2", meta.APIVersion)
	assert.Equal(t, chartName, meta.Name)
	assert.Equal(t, "0.1.0", meta.Version)
	assert.NotEmpty(t, meta.AppVersion)

	// The image tag follows appVersion unless overridden.
	m, _ := render(t)
	c := controllerContainer(t, deployment(t, m))
	assert.Equal(t, "harvester/harvester-equinix-addon:"+meta.AppVersion, c.Image)
}

func TestLintStrict(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{name: "defaults"},
		{name: "every option on", args: []string{"--values", testdata("all-on.yaml")}},
		{name: "hardware mode", args: hardwareMode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"lint", "--strict", chartDir(t), "--namespace", releaseNamespace}, tc.args...)
			out, err := runHelm(t, args...)
			require.NoError(t, err)
			assert.Contains(t, out, "0 chart(s) failed")
		})
	}
}

// TestRender checks the shape of the manifests for each combination of options.
func TestRender(t *testing.T) {
	const rancherd = "/etc/rancher/rancherd/config.yaml"
	for _, tc := range []struct {
		name  string
		args  []string
		check func(t *testing.T, m manifests)
	}{
		{
			name: "defaults",
			check: func(t *testing.T, m manifests) {
				assert.Len(t, m.ofKind("CustomResourceDefinition"), 5, "InstancePool, Instance, ElasticIP, ElasticIPPool, BMCInventory")
				for _, crd := range m.ofKind("CustomResourceDefinition") {
					assert.Equal(t, "keep", crd.GetAnnotations()["helm.sh/resource-policy"], crd.GetName())
				}
				for _, kind := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
					assert.NotNil(t, m.find(kind, releaseName), kind)
				}
				for _, o := range m {
					if o.GetKind() != "CustomResourceDefinition" && o.GetKind() != "ClusterRole" && o.GetKind() != "ClusterRoleBinding" {
						assert.Equal(t, releaseNamespace, o.GetNamespace(), "%s %s", o.GetKind(), o.GetName())
					}
				}

				d := deployment(t, m)
				pod := d.Spec.Template.Spec
				assert.Equal(t, ptr.To[int32](1), d.Spec.Replicas)
				assert.Equal(t, releaseName, pod.ServiceAccountName)
				for _, v := range pod.Volumes {
					assert.Nil(t, v.HostPath, "no hostPath without joinToken.fromHost (volume %s)", v.Name)
				}
				require.NotNil(t, pod.SecurityContext)
				assert.Equal(t, ptr.To(true), pod.SecurityContext.RunAsNonRoot)
				assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SecurityContext.SeccompProfile.Type)
				assertHardened(t, controllerContainer(t, d))
				assert.Equal(t, ptr.To(true), controllerContainer(t, d).SecurityContext.RunAsNonRoot)
				assertSchedulesOnControlPlane(t, pod)
				assertProbesAndPorts(t, controllerContainer(t, d))

				ipxe := typed[corev1.Service](t, m.find("Service", releaseName+"-ipxe"))
				assert.Equal(t, corev1.ServiceTypeNodePort, ipxe.Spec.Type)
				require.Len(t, ipxe.Spec.Ports, 1)
				assert.Equal(t, int32(30881), ipxe.Spec.Ports[0].NodePort)
				assert.Equal(t, "ipxe", ipxe.Spec.Ports[0].TargetPort.String())

				metrics := typed[corev1.Service](t, m.find("Service", releaseName+"-metrics"))
				assert.Equal(t, corev1.ServiceTypeClusterIP, metrics.Spec.Type)
				assert.Equal(t, "http", metrics.Spec.Ports[0].TargetPort.String())
				assert.Equal(t, "true", metrics.Annotations["prometheus.io/scrape"])
				assert.Equal(t, "8080", metrics.Annotations["prometheus.io/port"])
				assert.Equal(t, "/metrics", metrics.Annotations["prometheus.io/path"])
			},
		},
		{
			name: "every option on",
			args: []string{"--values", testdata("all-on.yaml")},
			check: func(t *testing.T, m manifests) {
				assert.Nil(t, m.find("Service", releaseName+"-metrics"), "metrics.enabled=false")
				d := deployment(t, m)
				pod := d.Spec.Template.Spec
				c := controllerContainer(t, d)
				assert.Equal(t, ptr.To[int32](2), d.Spec.Replicas)
				assert.Equal(t, "harvester/harvester-equinix-addon:v9.9.9", c.Image)
				assert.Equal(t, corev1.PullAlways, c.ImagePullPolicy)
				assert.Equal(t, "system-cluster-critical", pod.PriorityClassName)
				assert.Equal(t, []corev1.LocalObjectReference{{Name: "registry-credentials"}}, pod.ImagePullSecrets)
				assert.Equal(t, map[string]string{"kubernetes.io/os": "linux"}, pod.NodeSelector)
				assert.Equal(t, "yes", d.Spec.Template.Labels["example.com/label"])
				assert.Equal(t, "yes", d.Spec.Template.Annotations["example.com/annotation"])

				// fromHost: the one hostPath, read-only, a File, read as its owner.
				var host *corev1.Volume
				for i := range pod.Volumes {
					if pod.Volumes[i].HostPath != nil {
						require.Nil(t, host, "a second hostPath volume")
						host = &pod.Volumes[i]
					}
				}
				require.NotNil(t, host)
				assert.Equal(t, rancherd, host.HostPath.Path)
				assert.Equal(t, ptr.To(corev1.HostPathFile), host.HostPath.Type)
				assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: host.Name, MountPath: rancherd, ReadOnly: true})
				assert.Equal(t, rancherd, envValue(c, "RANCHERD_CONFIG"))
				assertHardened(t, c)
				assert.Equal(t, ptr.To[int64](0), c.SecurityContext.RunAsUser)
				assert.Equal(t, ptr.To(false), c.SecurityContext.RunAsNonRoot)

				ipxe := typed[corev1.Service](t, m.find("Service", releaseName+"-ipxe"))
				assert.Equal(t, int32(31881), ipxe.Spec.Ports[0].NodePort)
				assert.Equal(t, "yes", ipxe.Annotations["example.com/service"])
			},
		},
		{
			name: "iPXE Service inside the cluster only",
			args: []string{"--set", "ipxe.service.type=ClusterIP", "--set", "ipxe.publicURL=https://ipxe.example.com"},
			check: func(t *testing.T, m manifests) {
				ipxe := typed[corev1.Service](t, m.find("Service", releaseName+"-ipxe"))
				assert.Equal(t, corev1.ServiceTypeClusterIP, ipxe.Spec.Type)
				assert.Zero(t, ipxe.Spec.Ports[0].NodePort)
				c := controllerContainer(t, deployment(t, m))
				assert.False(t, hasEnv(c, "IPXE_NODE_PORT"), "a ClusterIP Service has no NodePort to advertise")
				assert.Equal(t, "https://ipxe.example.com", envValue(c, "IPXE_PUBLIC_URL"))
			},
		},
		{
			name: "NodePort picked by Kubernetes",
			args: []string{"--set", "ipxe.service.nodePort=null"},
			check: func(t *testing.T, m manifests) {
				ipxe := typed[corev1.Service](t, m.find("Service", releaseName+"-ipxe"))
				assert.Equal(t, corev1.ServiceTypeNodePort, ipxe.Spec.Type)
				assert.Zero(t, ipxe.Spec.Ports[0].NodePort)
				assert.False(t, hasEnv(controllerContainer(t, deployment(t, m)), "IPXE_NODE_PORT"))
			},
		},
		{
			name: "join token in the credentials Secret by default",
			args: []string{"--set", "secretName=creds"},
			check: func(t *testing.T, m manifests) {
				c := controllerContainer(t, deployment(t, m))
				assert.Equal(t, "creds", envValue(c, "SECRET_NAME"))
				assert.Equal(t, "creds", envValue(c, "JOIN_TOKEN_SECRET"))
				assert.Equal(t, "JOIN_TOKEN", envValue(c, "JOIN_TOKEN_KEY"))
			},
		},
		{
			name: "leader election off",
			args: []string{"--set", "leaderElection.enabled=false"},
			check: func(t *testing.T, m manifests) {
				assert.Equal(t, "false", envValue(controllerContainer(t, deployment(t, m)), "LEADER_ELECT"))
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := render(t, tc.args...)
			tc.check(t, m)
		})
	}
}

func assertHardened(t *testing.T, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	require.NotNil(t, sc)
	assert.Equal(t, ptr.To(false), sc.AllowPrivilegeEscalation)
	assert.Equal(t, ptr.To(true), sc.ReadOnlyRootFilesystem)
	require.NotNil(t, sc.Capabilities)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	assert.Empty(t, sc.Capabilities.Add)
	assert.Nil(t, sc.Privileged)
	require.NotNil(t, sc.SeccompProfile)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, sc.SeccompProfile.Type)
}

func assertSchedulesOnControlPlane(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	require.NotNil(t, pod.Affinity)
	require.NotNil(t, pod.Affinity.NodeAffinity)
	prefs := pod.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	require.NotEmpty(t, prefs)
	assert.Contains(t, prefs[0].Preference.MatchExpressions, corev1.NodeSelectorRequirement{
		Key: "node-role.kubernetes.io/control-plane", Operator: corev1.NodeSelectorOpIn, Values: []string{"true"},
	})
	for _, role := range []string{"control-plane", "etcd", "master"} {
		for _, effect := range []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute} {
			taint := corev1.Taint{Key: "node-role.kubernetes.io/" + role, Value: "true", Effect: effect}
			assert.True(t, slices.ContainsFunc(pod.Tolerations, func(tol corev1.Toleration) bool { return tolerates(tol, taint) }),
				"no toleration for %s:%s", taint.Key, effect)
		}
	}
}

// tolerates is the scheduler's matching for the operators the chart uses.
func tolerates(tol corev1.Toleration, taint corev1.Taint) bool {
	if tol.Key != taint.Key || (tol.Effect != "" && tol.Effect != taint.Effect) {
		return false
	}
	return tol.Operator == corev1.TolerationOpExists || tol.Value == taint.Value
}

func assertProbesAndPorts(t *testing.T, c corev1.Container) {
	t.Helper()
	assert.Contains(t, c.Ports, corev1.ContainerPort{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP})
	assert.Contains(t, c.Ports, corev1.ContainerPort{Name: "ipxe", ContainerPort: 8081, Protocol: corev1.ProtocolTCP})
	require.NotNil(t, c.LivenessProbe)
	require.NotNil(t, c.LivenessProbe.HTTPGet)
	assert.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	assert.Equal(t, "http", c.LivenessProbe.HTTPGet.Port.String())
	require.NotNil(t, c.ReadinessProbe)
	require.NotNil(t, c.ReadinessProbe.HTTPGet)
	assert.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, "http", c.ReadinessProbe.HTTPGet.Port.String())
	assert.NotEmpty(t, c.Resources.Requests)
	assert.NotEmpty(t, c.Resources.Limits)
}

// TestSchemaRejectsBadValues: values.schema.json turns a typo in an Addon's
// valuesContent into a failed install instead of a controller that crash-loops.
func TestSchemaRejectsBadValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{name: "unknown top-level key", args: []string{"--set", "pollIntervall=15s"}},
		{name: "unknown mode", args: []string{"--set", "mode=metal"}},
		{name: "duration without unit", args: []string{"--set-string", "pollInterval=15"}},
		{name: "log format", args: []string{"--set", "logFormat=xml"}},
		{name: "threads out of range", args: []string{"--set", "threads=0"}},
		{name: "Metal URL without /metal/v1", args: []string{"--set", "metalAPIURL=https://api.equinix.com"}},
		{name: "cluster URL not https", args: []string{"--set", "clusterURL=http://192.0.2.10"}},
		{name: "iPXE Service type", args: []string{"--set", "ipxe.service.type=ExternalName"}},
		{name: "fromHost not a bool", args: []string{"--set-string", "joinToken.fromHost=true"}},
		{name: "unknown monitoring key", args: []string{"--set", "monitoring.grafana.enabled=true"}},
		{name: "scrape interval without unit", args: []string{"--set-string", "monitoring.serviceMonitor.interval=30"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderRaw(t, tc.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "values don't meet the specifications of the schema")
		})
	}
}
