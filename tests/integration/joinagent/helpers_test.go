package joinagent

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/cluster"
	"github.com/harvester/harvester-equinix-addon/tests/sim/joinagent"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

var shared cluster.Shared

func TestMain(m *testing.M) {
	os.Exit(cluster.RunMain(m, cluster.Options{}, &shared))
}

const (
	metalToken = "ja-metal-token-3b7e"
	projectID  = "6c1f1a2e-0d3b-4e55-9a7c-2f4b8d9e0a11"
	joinToken  = "ja-join-token-Vq81"
	vip        = "10.0.0.10"
	version    = "v1.4.1"
	isoURL     = "https://releases.rancher.com/harvester/v1.4.1/harvester-v1.4.1-amd64.iso"

	installTime = 200 * time.Millisecond
	heartbeat   = 200 * time.Millisecond
	wait        = 20 * time.Second
	tick        = 20 * time.Millisecond
)

// world is one test's simulator, iPXE server and join agent on the shared
// cluster, driven only through the real SDK.
type world struct {
	t       *testing.T
	ctx     context.Context
	kube    kubernetes.Interface
	sim     *metalsim.Simulator
	agent   *joinagent.Agent
	metal   *metalv1.APIClient
	ipxeURL string
	logs    *logtest.Hook
	secrets []string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	c := shared.Require(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kube, err := kubernetes.NewForConfig(c.RESTConfig)
	require.NoError(t, err)

	sim := metalsim.New(metalsim.Options{Timings: metalsim.DefaultTimings().Scale(1.0 / 2000), Seed: 7})
	sim.AddProject(metalToken, projectID)
	api := httptest.NewServer(sim.Handler())
	t.Cleanup(api.Close)
	go sim.RunTicker(ctx, tick)
	ipxe := httptest.NewServer(harvester.NewIPXEHandler())
	t.Cleanup(ipxe.Close)

	logger, hook := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	agent := joinagent.New(sim, joinagent.Options{
		Kube:        kube,
		Expect:      joinagent.Expect{ServerURL: "https://" + vip + ":443", Token: joinToken},
		InstallTime: installTime, HeartbeatInterval: heartbeat, Log: logger,
	})
	agent.Start(ctx)

	cfg := metalv1.NewConfiguration()
	cfg.Servers = metalv1.ServerConfigurations{{URL: api.URL + "/metal/v1"}}
	cfg.AddDefaultHeader("X-Auth-Token", metalToken)
	w := &world{t: t, ctx: ctx, kube: kube, sim: sim, agent: agent, metal: metalv1.NewAPIClient(cfg),
		ipxeURL: ipxe.URL, logs: hook, secrets: []string{joinToken, metalToken}}
	t.Cleanup(w.assertLogsHoldNoSecrets)
	return w
}

// joinInput is a correct join configuration for hostname.
func (w *world) joinInput(hostname string, macs ...string) harvester.JoinConfigInput {
	w.t.Helper()
	_, hash, err := harvester.GenerateConsolePassword()
	require.NoError(w.t, err)
	return harvester.JoinConfigInput{
		ServerURL: vip, Token: joinToken, Hostname: hostname, PasswordHash: hash, MACs: macs,
		BondOptions:   map[string]string{"mode": "balance-tlb", "miimon": "100"},
		InstallDevice: "/dev/sda", ISOURL: isoURL,
	}
}

func render(t *testing.T, in harvester.JoinConfigInput) string {
	t.Helper()
	doc, err := harvester.RenderJoinConfig(in)
	require.NoError(t, err)
	return string(doc)
}

// createDevice creates a custom_ipxe device and removes its Node (if any)
// when the test ends; Nodes outlive the per-test simulator.
func (w *world) createDevice(hostname string, in metalv1.DeviceCreateInMetroInput) string {
	w.t.Helper()
	in.Metro, in.Plan, in.OperatingSystem, in.Hostname = "da", "c3.small.x86", metalsim.OSCustomIPXE, metalv1.PtrString(hostname)
	dev, _, err := w.metal.DevicesApi.CreateDevice(w.ctx, projectID).
		CreateDeviceRequest(metalv1.CreateDeviceRequest{DeviceCreateInMetroInput: &in}).Execute()
	require.NoError(w.t, err)
	w.t.Cleanup(func() {
		err := w.kube.CoreV1().Nodes().Delete(context.Background(), hostname, metav1.DeleteOptions{})
		if !apierrors.IsNotFound(err) {
			assert.NoError(w.t, err)
		}
	})
	return dev.GetId()
}

// shellDevice is phase 1 of the seed's flow: a device booted into the iPXE
// shell, active, whose boot the agent has seen.
func (w *world) shellDevice(hostname string) string {
	w.t.Helper()
	id := w.createDevice(hostname, metalv1.DeviceCreateInMetroInput{Userdata: metalv1.PtrString(harvester.ShellScript())})
	w.waitState(id, metalv1.DEVICESTATE_ACTIVE)
	w.waitEvent(id, "ipxe.shell", "")
	return id
}

// reinstall is phase 2: the installer script URL and the join configuration
// written to the device, then a reinstall.
func (w *world) reinstall(id, userdata string) {
	w.t.Helper()
	script, err := harvester.InstallerScriptURL(w.ipxeURL, version, equinixv1.BootModeReinstall, nil)
	require.NoError(w.t, err)
	_, _, err = w.metal.DevicesApi.UpdateDevice(w.ctx, id).DeviceUpdateInput(metalv1.DeviceUpdateInput{
		IpxeScriptUrl: metalv1.PtrString(script), Userdata: metalv1.PtrString(userdata),
	}).Execute()
	require.NoError(w.t, err)
	w.action(id, metalv1.DEVICEACTIONINPUTTYPE_REINSTALL)
}

func (w *world) action(id string, typ metalv1.DeviceActionInputType) {
	w.t.Helper()
	_, err := w.metal.DevicesApi.PerformAction(w.ctx, id).DeviceActionInput(metalv1.DeviceActionInput{Type: typ}).Execute()
	require.NoError(w.t, err)
}

func (w *world) device(id string) *metalv1.Device {
	w.t.Helper()
	dev, _, err := w.metal.DevicesApi.FindDeviceById(w.ctx, id).Execute()
	require.NoError(w.t, err)
	return dev
}

func (w *world) waitState(id string, state metalv1.DeviceState) {
	w.t.Helper()
	require.Eventually(w.t, func() bool {
		dev, _, err := w.metal.DevicesApi.FindDeviceById(w.ctx, id).Execute()
		return err == nil && dev.GetState() == state
	}, wait, tick, "device %s never became %s", id, state)
}

// mac reads a port's MAC the way the addon does: from network_ports.
func (w *world) mac(id, port string) string {
	w.t.Helper()
	for _, p := range w.device(id).NetworkPorts {
		if p.GetName() == port {
			require.NotEmpty(w.t, p.Data.GetMac())
			return p.Data.GetMac()
		}
	}
	w.t.Fatalf("device %s has no port %s", id, port)
	return ""
}

func (w *world) events(id string) []metalv1.Event {
	w.t.Helper()
	list, err := w.metal.EventsApi.FindDeviceEvents(w.ctx, id).ExecuteWithPagination()
	require.NoError(w.t, err)
	return list.Events
}

// waitEvent waits for an event of typ whose body contains want.
func (w *world) waitEvent(id, typ, want string) metalv1.Event {
	w.t.Helper()
	var found metalv1.Event
	require.Eventually(w.t, func() bool {
		list, err := w.metal.EventsApi.FindDeviceEvents(w.ctx, id).ExecuteWithPagination()
		if err != nil {
			return false
		}
		for _, e := range list.Events {
			if e.GetType() == typ && strings.Contains(e.GetBody(), want) {
				found = e
				return true
			}
		}
		return false
	}, wait, tick, "device %s has no %s event containing %q", id, typ, want)
	return found
}

func (w *world) node(name string) (*corev1.Node, error) {
	return w.kube.CoreV1().Nodes().Get(w.ctx, name, metav1.GetOptions{})
}

func (w *world) waitReady(name string, status corev1.ConditionStatus) *corev1.Node {
	w.t.Helper()
	var node *corev1.Node
	require.Eventually(w.t, func() bool {
		n, err := w.node(name)
		if err != nil {
			return false
		}
		node = n
		return ready(n).Status == status
	}, wait, tick, "node %s never reported Ready=%s", name, status)
	return node
}

func ready(node *corev1.Node) corev1.NodeCondition {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c
		}
	}
	return corev1.NodeCondition{}
}

func (w *world) heartbeat(name string) time.Time {
	w.t.Helper()
	n, err := w.node(name)
	require.NoError(w.t, err)
	return ready(n).LastHeartbeatTime.Time
}

// waitHeartbeatAfter waits for a heartbeat newer than t; heartbeats are
// stored with second precision, so this takes up to a second.
func (w *world) waitHeartbeatAfter(name string, t time.Time) {
	w.t.Helper()
	require.Eventually(w.t, func() bool {
		n, err := w.node(name)
		return err == nil && ready(n).LastHeartbeatTime.After(t)
	}, wait, tick, "the heartbeat of %s did not advance past %s", name, t)
}

// assertHeartbeatStopped checks for longer than two heartbeat periods and a
// second of timestamp precision that nothing touches the Ready condition.
func (w *world) assertHeartbeatStopped(name string) {
	w.t.Helper()
	n, err := w.node(name)
	require.NoError(w.t, err)
	before := ready(n)
	assert.Never(w.t, func() bool {
		n, err := w.node(name)
		return err != nil || ready(n).LastHeartbeatTime != before.LastHeartbeatTime || ready(n).Status != before.Status
	}, 2*time.Second+5*heartbeat, 100*time.Millisecond, "the Ready condition of %s kept changing", name)
}

// installTwoPhase takes a device through the seed's flow with a correct
// configuration and returns it with its Ready Node.
func (w *world) installTwoPhase(hostname string) (string, *corev1.Node) {
	w.t.Helper()
	id := w.shellDevice(hostname)
	w.reinstall(id, render(w.t, w.joinInput(hostname, w.mac(id, "eth0"))))
	return id, w.waitReady(hostname, corev1.ConditionTrue)
}

// assertNoSecrets checks every event of the device for tokens.
func (w *world) assertNoSecrets(id string, extra ...string) {
	w.t.Helper()
	for _, e := range w.events(id) {
		for _, s := range append(extra, w.secrets...) {
			assert.NotContains(w.t, e.GetBody(), s, "event %s", e.GetType())
			assert.NotContains(w.t, e.GetInterpolated(), s, "event %s", e.GetType())
		}
	}
}

func (w *world) assertLogsHoldNoSecrets() {
	for _, e := range w.logs.AllEntries() {
		line, err := e.String()
		require.NoError(w.t, err)
		for _, s := range w.secrets {
			assert.NotContains(w.t, line, s)
		}
	}
}
