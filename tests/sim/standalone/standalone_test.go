package standalone

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

const (
	token     = "standalone-metal-token"
	projectID = "0f0e0d0c-0b0a-4909-8807-060504030201"
	joinToken = "standalone-join-token"
)

func sdk(url, tok string) *metalv1.APIClient {
	cfg := metalv1.NewConfiguration()
	cfg.Servers = metalv1.ServerConfigurations{{URL: url}}
	cfg.AddDefaultHeader("X-Auth-Token", tok)
	return metalv1.NewAPIClient(cfg)
}

func start(t *testing.T, cfg Config) *Simulator {
	t.Helper()
	s, err := Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

func createDevice(t *testing.T, c *metalv1.APIClient, in metalv1.DeviceCreateInMetroInput) *metalv1.Device {
	t.Helper()
	dev, _, err := c.DevicesApi.CreateDevice(context.Background(), projectID).
		CreateDeviceRequest(metalv1.CreateDeviceRequest{DeviceCreateInMetroInput: &in}).Execute()
	require.NoError(t, err)
	return dev
}

func TestServesProjectsAndLogsProgressWithoutUserdata(t *testing.T) {
	logger, hook := logtest.NewNullLogger()
	s := start(t, Config{
		Projects:    []Project{{Token: token, ID: projectID}, {Token: "other-token", ID: "other-project"}},
		TimingScale: 0, TickInterval: 10 * time.Millisecond, Log: logger,
	})
	require.True(t, strings.HasSuffix(s.URL, "/metal/v1"), s.URL)

	secret := "userdata-secret-41"
	dev := createDevice(t, sdk(s.URL, token), metalv1.DeviceCreateInMetroInput{
		Metro: "da", Plan: "c3.small.x86", OperatingSystem: "ubuntu_22_04",
		Hostname: metalv1.PtrString("progress-1"), Userdata: metalv1.PtrString("#cloud-config\n# " + secret + "\n"),
	})
	require.Eventually(t, func() bool {
		got, _, err := sdk(s.URL, token).DevicesApi.FindDeviceById(context.Background(), dev.GetId()).Execute()
		return err == nil && got.GetState() == metalv1.DEVICESTATE_ACTIVE
	}, 5*time.Second, 10*time.Millisecond)

	var lines []string
	for _, e := range hook.AllEntries() {
		lines = append(lines, e.Message)
		for k, v := range e.Data {
			assert.NotContains(t, k+"="+toString(v), secret)
			assert.NotContains(t, k+"="+toString(v), token)
		}
		assert.NotContains(t, e.Message, secret)
		assert.NotContains(t, e.Message, token)
	}
	for _, want := range []string{"device progress-1 queued", "device progress-1 provisioning", "device progress-1 active"} {
		assert.Contains(t, lines, want)
	}

	_, resp, err := sdk(s.URL, "other-token").DevicesApi.FindProjectDevices(context.Background(), "other-project").Execute()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	_, resp, err = sdk(s.URL, "other-token").DevicesApi.FindDeviceById(context.Background(), dev.GetId()).Execute()
	require.Error(t, err, "the second token must not see the first project's device")
	assert.Contains(t, []int{http.StatusForbidden, http.StatusNotFound}, resp.StatusCode)
}

func toString(v interface{}) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

// The agent wired by Start installs a single-boot device and registers its
// Node; a fake clientset stands in for the cluster here (the real apiserver
// runs in tests/integration/joinagent).
func TestJoinAgentRegistersNode(t *testing.T) {
	kube := fake.NewClientset()
	ipxe := httptest.NewServer(harvester.NewIPXEHandler())
	t.Cleanup(ipxe.Close)
	s := start(t, Config{
		Projects: []Project{{Token: token, ID: projectID}}, TimingScale: 0, TickInterval: 10 * time.Millisecond,
		Join: &Join{Kube: kube, ClusterURL: "10.0.0.10", Token: joinToken, HeartbeatInterval: time.Hour},
		Log:  logrus.New(),
	})
	require.NotNil(t, s.Agent)

	script, err := harvester.InstallerScriptURL(ipxe.URL, "v1.4.1", equinixv1.BootModeSingleBoot, nil)
	require.NoError(t, err)
	_, hash, err := harvester.GenerateConsolePassword()
	require.NoError(t, err)
	userdata, err := harvester.RenderJoinConfig(harvester.JoinConfigInput{
		ServerURL: "10.0.0.10", Token: joinToken, Hostname: "single-1", PasswordHash: hash, SingleBoot: true,
		InstallDevice: "/dev/sda", ISOURL: "https://releases.rancher.com/harvester/v1.4.1/harvester-v1.4.1-amd64.iso",
	})
	require.NoError(t, err)
	createDevice(t, sdk(s.URL, token), metalv1.DeviceCreateInMetroInput{
		Metro: "da", Plan: "c3.small.x86", OperatingSystem: "custom_ipxe", Hostname: metalv1.PtrString("single-1"),
		IpxeScriptUrl: metalv1.PtrString(script), Userdata: metalv1.PtrString(string(userdata)),
	})

	var node *corev1.Node
	require.Eventually(t, func() bool {
		node, err = kube.CoreV1().Nodes().Get(context.Background(), "single-1", metav1.GetOptions{})
		return err == nil && harvester.IsNodeReady(node)
	}, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, "single-1", node.Labels[harvester.InstanceLabel])
	// The agent takes the node as its own before it writes it Ready, so that
	// a stop coming meanwhile finds it.
	assert.Equal(t, []string{"single-1"}, s.Agent.NodeNames())
}

func TestStartRefusesBadConfig(t *testing.T) {
	ok := []Project{{Token: token, ID: projectID}}
	kube := fake.NewClientset()
	cases := map[string]struct {
		cfg  Config
		want string
	}{
		"no project":         {Config{}, "at least one project"},
		"empty token":        {Config{Projects: []Project{{ID: projectID}}}, "token and project ID are required"},
		"negative scale":     {Config{Projects: ok, TimingScale: -1}, "negative"},
		"agent without kube": {Config{Projects: ok, Join: &Join{ClusterURL: "10.0.0.10", Token: joinToken}}, "Kubernetes client"},
		"non-443 cluster URL": {Config{Projects: ok, Join: &Join{Kube: kube, ClusterURL: "https://10.0.0.10:6443", Token: joinToken}},
			"port 6443"},
		"empty join token": {Config{Projects: ok, Join: &Join{Kube: kube, ClusterURL: "10.0.0.10"}}, "token is empty"},
		"invalid address":  {Config{Projects: ok, Listen: "256.0.0.1:1"}, "listen"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := Start(context.Background(), tc.cfg)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestCloseStopsServing(t *testing.T) {
	s, err := Start(context.Background(), Config{Projects: []Project{{Token: token, ID: projectID}}})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	_, _, err = sdk(s.URL, token).DevicesApi.FindProjectDevices(context.Background(), projectID).Execute()
	assert.Error(t, err)
}

func TestInstallTimeScales(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg  Config
		want time.Duration
	}{
		"real":     {Config{TimingScale: 1, Join: &Join{}}, RealInstallTime},
		"scaled":   {Config{TimingScale: 0.01, Join: &Join{}}, 9 * time.Second},
		"instant":  {Config{TimingScale: 0, Join: &Join{}}, minInstallTime},
		"explicit": {Config{TimingScale: 1, Join: &Join{InstallTime: time.Second}}, time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, installTime(tc.cfg))
		})
	}
}

func TestElasticIPsAtStart(t *testing.T) {
	vip, err := ParseElasticIP("10.0.0.10/32@da")
	require.NoError(t, err)
	global, err := ParseElasticIP("147.28.200.8/31")
	require.NoError(t, err)
	logger, _ := logtest.NewNullLogger()
	s := start(t, Config{Projects: []Project{{Token: token, ID: projectID}}, ElasticIPs: []ElasticIP{vip, global}, Log: logger})
	list, _, err := sdk(s.URL, token).IPAddressesApi.FindIPReservations(context.Background(), projectID).Execute()
	require.NoError(t, err)
	got := map[string]metalv1.IPReservationType{}
	for _, item := range list.IpAddresses {
		got[item.IPReservation.GetAddress()] = item.IPReservation.GetType()
	}
	assert.Equal(t, map[string]metalv1.IPReservationType{
		"10.0.0.10": metalv1.IPRESERVATIONTYPE_PUBLIC_IPV4, "147.28.200.8": metalv1.IPRESERVATIONTYPE_GLOBAL_IPV4,
	}, got)

	for _, bad := range []string{"", "10.0.0.10@", "@da"} {
		_, err := ParseElasticIP(bad)
		assert.Error(t, err, bad)
	}
	_, err = Start(context.Background(), Config{Projects: []Project{{Token: token, ID: projectID}},
		ElasticIPs: []ElasticIP{{IPReservationSpec: metalsim.IPReservationSpec{CIDR: "10.0.0.10", Metro: "nowhere"}}}})
	assert.ErrorIs(t, err, metalsim.ErrInvalid)
}
