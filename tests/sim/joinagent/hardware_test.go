package joinagent

import (
	"context"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// The hardware tests run the agent against a real kube-apiserver (started
// once for the package); the unit tests here do not need it.
var shared cluster.Shared

func TestMain(m *testing.M) {
	os.Exit(cluster.RunMain(m, cluster.Options{}, &shared))
}

const (
	hwToken     = "hw-metal-token"
	hwProject   = "5d2e3f40-1a2b-4c3d-8e9f-0a1b2c3d4e5f"
	hwJoinToken = "hw-join-token-K7p2"
	hwWait      = 20 * time.Second
	hwTick      = 20 * time.Millisecond
)

// readyLog records every Ready status a Node reports, through a watch, so a
// short-lived state (a reboot's Unknown) is not missed between two polls.
type readyLog struct {
	mu       sync.Mutex
	statuses []corev1.ConditionStatus
}

func watchReady(ctx context.Context, t *testing.T, kube kubernetes.Interface, name string) *readyLog {
	t.Helper()
	w, err := kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	require.NoError(t, err)
	l := &readyLog{}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			if c := harvester.NodeReadyCondition(n); c != nil {
				l.add(c.Status)
			}
		}
	}()
	return l
}

func (l *readyLog) add(s corev1.ConditionStatus) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.statuses) == 0 || l.statuses[len(l.statuses)-1] != s {
		l.statuses = append(l.statuses, s)
	}
}

// since returns the statuses reported from index i on.
func (l *readyLog) since(i int) []corev1.ConditionStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]corev1.ConditionStatus(nil), l.statuses[min(i, len(l.statuses)):]...)
}

func (l *readyLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.statuses)
}

// The Node follows what the platform does to its server: power off stops the
// kubelet, power on and a reboot bring it back, a reclaim ends it.
func TestNodeFollowsPowerAndReclaim(t *testing.T) {
	c := shared.Require(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kube, err := kubernetes.NewForConfig(c.RESTConfig)
	require.NoError(t, err)

	timings := metalsim.DefaultTimings().Scale(1.0 / 2000)
	// Long enough for the watch to see the host down during a reboot.
	timings.Power = 300 * time.Millisecond
	sim := metalsim.New(metalsim.Options{Timings: timings, Seed: 3})
	sim.AddProject(hwToken, hwProject)
	api := httptest.NewServer(sim.Handler())
	t.Cleanup(api.Close)
	go sim.RunTicker(ctx, hwTick)
	ipxe := httptest.NewServer(harvester.NewIPXEHandler())
	t.Cleanup(ipxe.Close)
	agent := New(sim, Options{
		Kube: kube, Expect: Expect{ServerURL: "https://10.0.0.10:443", Token: hwJoinToken},
		InstallTime: 100 * time.Millisecond, HeartbeatInterval: 200 * time.Millisecond, Log: logrus.New(),
	})
	agent.Start(ctx)

	cfg := metalv1.NewConfiguration()
	cfg.Servers = metalv1.ServerConfigurations{{URL: api.URL + "/metal/v1"}}
	cfg.AddDefaultHeader("X-Auth-Token", hwToken)
	client := metalv1.NewAPIClient(cfg)

	const hostname = "hw-power-1"
	t.Cleanup(func() { _ = kube.CoreV1().Nodes().Delete(context.Background(), hostname, metav1.DeleteOptions{}) })
	script, err := harvester.InstallerScriptURL(ipxe.URL, "v1.4.1", equinixv1.BootModeSingleBoot, nil)
	require.NoError(t, err)
	_, hash, err := harvester.GenerateConsolePassword()
	require.NoError(t, err)
	userdata, err := harvester.RenderJoinConfig(harvester.JoinConfigInput{
		ServerURL: "10.0.0.10", Token: hwJoinToken, Hostname: hostname, PasswordHash: hash, SingleBoot: true,
		InstallDevice: "/dev/sda", ISOURL: "https://releases.rancher.com/harvester/v1.4.1/harvester-v1.4.1-amd64.iso",
	})
	require.NoError(t, err)
	dev, _, err := client.DevicesApi.CreateDevice(ctx, hwProject).CreateDeviceRequest(metalv1.CreateDeviceRequest{
		DeviceCreateInMetroInput: &metalv1.DeviceCreateInMetroInput{
			Metro: "da", Plan: "c3.small.x86", OperatingSystem: metalsim.OSCustomIPXE, Hostname: metalv1.PtrString(hostname),
			IpxeScriptUrl: metalv1.PtrString(script), Userdata: metalv1.PtrString(string(userdata)),
			SpotInstance: metalv1.PtrBool(true), SpotPriceMax: metalv1.PtrFloat32(5),
		}}).Execute()
	require.NoError(t, err)
	id := dev.GetId()

	readyIs := func(want corev1.ConditionStatus) func() bool {
		return func() bool {
			n, err := kube.CoreV1().Nodes().Get(ctx, hostname, metav1.GetOptions{})
			c := harvester.NodeReadyCondition(n)
			return err == nil && c != nil && c.Status == want
		}
	}
	act := func(typ metalv1.DeviceActionInputType) {
		_, err := client.DevicesApi.PerformAction(ctx, id).DeviceActionInput(metalv1.DeviceActionInput{Type: typ}).Execute()
		require.NoError(t, err)
	}
	require.Eventually(t, readyIs(corev1.ConditionTrue), hwWait, hwTick, "the node never joined")
	log := watchReady(ctx, t, kube, hostname)

	act(metalv1.DEVICEACTIONINPUTTYPE_POWER_OFF)
	require.Eventually(t, readyIs(corev1.ConditionUnknown), hwWait, hwTick, "a powered-off server's node stays Ready")
	act(metalv1.DEVICEACTIONINPUTTYPE_POWER_ON)
	require.Eventually(t, readyIs(corev1.ConditionTrue), hwWait, hwTick, "a powered-on server's node never came back")

	before := log.len()
	act(metalv1.DEVICEACTIONINPUTTYPE_REBOOT)
	require.Eventually(t, func() bool {
		s := log.since(before)
		return len(s) >= 2 && s[len(s)-2] == corev1.ConditionUnknown && s[len(s)-1] == corev1.ConditionTrue
	}, hwWait, hwTick, "a reboot should take the node down and bring it back: %v", log.since(before))
	assert.Equal(t, []string{hostname}, agent.NodeNames())

	require.NoError(t, sim.SetTerminationTime(id, time.Now().Add(100*time.Millisecond)))
	require.Eventually(t, readyIs(corev1.ConditionUnknown), hwWait, hwTick, "a reclaimed server's node stays Ready")
	require.Eventually(t, func() bool { return len(agent.NodeNames()) == 0 }, hwWait, hwTick, "the agent still runs the reclaimed node")
	require.Eventually(t, func() bool { _, ok := sim.Device(id); return !ok }, hwWait, hwTick, "the reclaimed device is still there")
}
