package ownedpools

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/joinagent"
)

// A boot you can watch: the test plays the server's firmware, iPXE, the
// installer and the kubelet one step at a time, and after each the
// Instance says where the server is (its phase, what it waits for, the
// Installing condition and an Event), each step's time is in its status,
// and every phase from the claim to Ready is timed.
func TestEachStepOfTheBootShowsOnTheInstance(t *testing.T) {
	env, _, addr := fleetEnv(t)
	// A BMC the fleet does not know: nothing boots unless the test asks.
	s := addServer(t, env, "rack-w-1", mac(60), map[string]string{"rack": "w"})
	before := phaseCounts(t)
	createPool(t, env, ownedPool("rack-w", 1, map[string]string{"rack": "w"}))

	inst := waitInstance(t, env, "rack-w", "the server was never booted", func(i *equinixv1.Instance) bool {
		return i.Status.InstallRequestedAt != nil
	})
	assert.Equal(t, equinixv1.PhaseProvisioning, inst.Status.Status, "powered on, no network boot yet")
	assert.Equal(t, "network boot", inst.Status.WaitingFor)
	assert.Equal(t, s.name, inst.Status.Server)
	assert.Equal(t, mac(60), inst.Status.ManagementMAC)

	// iPXE asks for its script.
	script := bootGet(t, fmt.Sprintf("http://%s/boot/ipxe?mac=%s&uuid=%s", addr, url.QueryEscape(mac(60)), inst.Status.SystemUUID), http.StatusOK)
	inst = waitInstance(t, env, "rack-w", "the script served never showed", func(i *equinixv1.Instance) bool {
		return i.Status.BootScriptServedAt != nil && i.Status.Status == equinixv1.PhaseInstalling
	})
	assert.Equal(t, "installer to start", inst.Status.WaitingFor)
	assert.Equal(t, equinixv1.ReasonBootScriptServed, conditions.Get(inst.Status.Conditions, equinixv1.InstanceInstalling).Reason)
	assert.True(t, env.EventRecorded(inst.Name, equinixv1.ReasonBootScriptServed))

	// The installer fetches its configuration.
	bootGet(t, configURLOf(t, script), http.StatusOK)
	inst = waitInstance(t, env, "rack-w", "the installer running never showed", func(i *equinixv1.Instance) bool {
		return i.Status.InstallConfigServedAt != nil && i.Status.WaitingFor == "installer to finish"
	})
	assert.Equal(t, equinixv1.PhaseInstalling, inst.Status.Status, "the installer runs: installing, not joining")
	assert.Equal(t, equinixv1.ReasonInstallerRunning, conditions.Get(inst.Status.Conditions, equinixv1.InstanceInstalling).Reason)
	assert.True(t, env.EventRecorded(inst.Name, equinixv1.ReasonInstallerRunning))
	assert.Nil(t, inst.Status.NodeRegisteredAt)

	// The node registers, not Ready yet.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: s.name, Labels: map[string]string{equinixv1.LabelInstance: inst.Name}}}
	_, err := env.Kube.CoreV1().Nodes().Create(env.Ctx, node, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Kube.CoreV1().Nodes().Delete(env.Ctx, s.name, metav1.DeleteOptions{}) })
	env.SetNodeReady(s.name, false)
	require.Eventually(t, func() bool {
		n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, s.name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.52.0.61"}}
		_, err = env.Kube.CoreV1().Nodes().UpdateStatus(env.Ctx, n, metav1.UpdateOptions{})
		return err == nil
	}, wait, tick)
	inst = waitInstance(t, env, "rack-w", "the registered node never showed", func(i *equinixv1.Instance) bool {
		return i.Status.NodeRegisteredAt != nil && i.Status.Address == "10.52.0.61"
	})
	assert.Equal(t, equinixv1.PhaseJoining, inst.Status.Status)
	assert.Equal(t, "node Ready", inst.Status.WaitingFor)

	env.SetNodeReady(s.name, true)
	inst = waitInstance(t, env, "rack-w", "the Instance never became managed", func(i *equinixv1.Instance) bool {
		return i.Status.Status == equinixv1.PhaseManaged
	})
	assert.Empty(t, inst.Status.WaitingFor)
	st := inst.Status
	for _, step := range []struct {
		name     string
		from, to *metav1.Time
	}{
		{"power on", st.DeviceCreatedAt, st.InstallRequestedAt},
		{"network boot", st.InstallRequestedAt, st.BootScriptServedAt},
		{"installer start", st.BootScriptServedAt, st.InstallConfigServedAt},
		{"install", st.InstallConfigServedAt, st.NodeRegisteredAt},
		{"node Ready", st.NodeRegisteredAt, st.JoinedAt},
	} {
		require.NotNil(t, step.from, step.name)
		require.NotNil(t, step.to, step.name)
		assert.False(t, step.to.Before(step.from), "%s ends before it starts", step.name)
	}
	after := phaseCounts(t)
	for _, phase := range []string{metrics.BootPhasePowerOn, metrics.BootPhaseNetworkBoot, metrics.BootPhaseInstallerStart,
		metrics.BootPhaseInstall, metrics.BootPhaseNodeReady, metrics.BootPhaseClaimToReady} {
		assert.Equal(t, before[phase]+1, after[phase], "phase %s timed once", phase)
	}
}

// A request naming another NIC of a claimed server (the server boots from
// the network on the wrong port) is refused with an answer that says so,
// and a Warning Event on the Instance names both MACs.
func TestBootOnAnotherNICIsTold(t *testing.T) {
	env, _, addr := fleetEnv(t)
	addServer(t, env, "rack-n-1", mac(61), map[string]string{"rack": "n"})
	createPool(t, env, ownedPool("rack-n", 1, map[string]string{"rack": "n"}))
	inst := waitInstance(t, env, "rack-n", "the server was never booted", func(i *equinixv1.Instance) bool {
		return i.Status.InstallRequestedAt != nil
	})
	var other string
	for _, m := range inst.Status.MACAddresses {
		if !strings.EqualFold(m, mac(61)) {
			other = strings.ToLower(m)
		}
	}
	require.NotEmpty(t, other, "the BMC's NICs were recorded: %v", inst.Status.MACAddresses)

	body := bootGet(t, fmt.Sprintf("http://%s/boot/ipxe?mac=%s&uuid=%s", addr, url.QueryEscape(other), inst.Status.SystemUUID), http.StatusNotFound)
	assert.Contains(t, body, "not the management NIC")
	require.True(t, env.EventRecorded(inst.Name, equinixv1.ReasonBootOtherNIC), "no BootOtherNIC Event")
	for _, ev := range env.Events(inst.Name) {
		if ev.Reason == equinixv1.ReasonBootOtherNIC {
			assert.Equal(t, corev1.EventTypeWarning, ev.Type)
			assert.Contains(t, ev.Message, other)
			assert.Contains(t, ev.Message, mac(61))
		}
	}
	got, err := env.Client.EquinixV1().Instances().Get(env.Ctx, inst.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Nil(t, got.Status.BootScriptServedAt, "nothing was served")
}

// waitInstance waits for the pool's one Instance to meet ok.
func waitInstance(t *testing.T, env *framework.Env, pool, msg string, ok func(*equinixv1.Instance) bool) equinixv1.Instance {
	t.Helper()
	var inst equinixv1.Instance
	require.Eventually(t, func() bool {
		insts := instancesOf(t, env, pool)
		if len(insts) != 1 {
			return false
		}
		inst = insts[0]
		return ok(&inst)
	}, wait, tick, "%s: %+v", msg, &inst.Status)
	return inst
}

// bootGet asks the boot endpoint as the server would, and returns the
// answer's body.
func bootGet(t *testing.T, u string, code int) string {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, code, resp.StatusCode, "%s: %s", u, body)
	return string(body)
}

// configURLOf is the install configuration's URL in a script.
func configURLOf(t *testing.T, script string) string {
	t.Helper()
	u := joinagent.ConfigURL(strings.Fields(script))
	if u == "" {
		t.Fatalf("no config_url in\n%s", script)
	}
	return u
}

// phaseCounts are the observations of each boot phase so far (the
// controller runs in the test's process).
func phaseCounts(t *testing.T) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, phase := range []string{metrics.BootPhasePowerOn, metrics.BootPhaseNetworkBoot, metrics.BootPhaseInstallerStart,
		metrics.BootPhaseInstall, metrics.BootPhaseNodeReady, metrics.BootPhaseClaimToReady} {
		out[phase] = histogramCount(t, phase)
	}
	return out
}

func histogramCount(t *testing.T, phase string) uint64 {
	t.Helper()
	families, err := metrics.Registerer().(prometheus.Gatherer).Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "equinix_addon_owned_boot_phase_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "phase" && l.GetValue() == phase {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}
