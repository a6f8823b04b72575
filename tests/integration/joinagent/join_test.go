// Package joinagent tests the node-join agent against the real test
// apiserver: devices are driven through the real SDK exactly as the addon
// drives them, and the agent plays the servers' side of the install.
package joinagent

import (
	"strings"
	"testing"
	"time"

	"github.com/equinix/equinix-sdk-go/services/metalv1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/sim/joinagent"
)

// The seed's two-phase flow with a correct configuration: iPXE shell, then
// the installer with the join config naming eth0's MAC, ends in a Ready Node
// named after the hostname that keeps heartbeating.
func TestTwoPhaseInstallRegistersAReadyNode(t *testing.T) {
	w := newWorld(t)
	const hostname = "ja-two-phase"
	id, node := w.installTwoPhase(hostname)

	assert.Equal(t, hostname, node.Labels[harvester.InstanceLabel])
	assert.Equal(t, hostname, node.Labels["kubernetes.io/hostname"])
	assert.Equal(t, id, node.Status.NodeInfo.MachineID)
	assert.Equal(t, "Harvester "+version, node.Status.NodeInfo.OSImage)

	want := []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: hostname}}
	for _, ip := range w.device(id).IpAddresses {
		if ip.GetAddressFamily() != 4 {
			continue
		}
		typ := corev1.NodeInternalIP
		if ip.GetPublic() {
			typ = corev1.NodeExternalIP
		}
		want = append(want, corev1.NodeAddress{Type: typ, Address: ip.GetAddress()})
	}
	assert.ElementsMatch(t, want, node.Status.Addresses)
	assert.Len(t, want, 3, "a layer-3 device has a public and a private IPv4 address")

	w.waitHeartbeatAfter(hostname, ready(node).LastHeartbeatTime.Time)
	node, err := w.node(hostname)
	require.NoError(t, err)
	assert.Equal(t, corev1.ConditionTrue, ready(node).Status, "heartbeats keep the node Ready")

	started := w.waitEvent(id, "harvester.install.started", hostname)
	assert.Contains(t, started.GetBody(), isoURL)
	w.waitEvent(id, "harvester.install.succeeded", "node "+hostname+" joined")
	assert.Equal(t, []string{hostname}, w.agent.NodeNames())
	results := w.agent.Results()
	require.NotEmpty(t, results)
	last := results[len(results)-1]
	assert.True(t, last.OK, last.Reason)
	assert.Equal(t, []string{strings.ToLower(w.mac(id, "eth0"))}, last.MACs)
	w.assertNoSecrets(id)
}

// A wrong configuration fails the install the way a real one does: no Node,
// and a device event that says why without printing a token.
func TestWrongConfigurationYieldsNoNode(t *testing.T) {
	const wrongToken = "ja-other-token-Hh3"
	cases := []struct {
		name string
		// userdata builds the join configuration from a correct input and
		// the device's eth0 MAC.
		userdata func(t *testing.T, in harvester.JoinConfigInput, mac string) string
		reason   string
	}{
		{"MAC of another server", func(t *testing.T, in harvester.JoinConfigInput, _ string) string {
			in.MACs = []string{"de:ad:be:ef:00:01"}
			return render(t, in)
		}, "management interface hwAddr de:ad:be:ef:00:01 matches no NIC of this server"},
		{"wrong join token", func(t *testing.T, in harvester.JoinConfigInput, mac string) string {
			in.Token, in.MACs = wrongToken, []string{mac}
			return render(t, in)
		}, "the join token is wrong"},
		{"another cluster's URL", func(t *testing.T, in harvester.JoinConfigInput, mac string) string {
			in.ServerURL, in.MACs = "10.9.9.9", []string{mac}
			return render(t, in)
		}, "server_url https://10.9.9.9:443 is not this cluster (https://10.0.0.10:443)"},
		{"a port other than 443", func(t *testing.T, in harvester.JoinConfigInput, mac string) string {
			// RenderJoinConfig refuses such a URL, so the document is edited
			// the way a hand-written configuration would carry it.
			in.MACs = []string{mac}
			doc := render(t, in)
			edited := strings.Replace(doc, "server_url: https://10.0.0.10:443", "server_url: https://10.0.0.10:6443", 1)
			require.NotEqual(t, doc, edited, "the rendered server_url line moved")
			return edited
		}, "non-443 port are not allowed"},
	}
	w := newWorld(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hostname := "ja-wrong-" + string(rune('a'+i))
			id := w.shellDevice(hostname)
			w.reinstall(id, tc.userdata(t, w.joinInput(hostname), w.mac(id, "eth0")))

			failed := w.waitEvent(id, "harvester.install.failed", tc.reason)
			assert.True(t, strings.HasPrefix(failed.GetBody(), "Harvester install failed: "), failed.GetBody())
			// The install was evaluated and refused at boot; a Node would
			// only appear after the install time, so watch well past it.
			assert.Never(t, func() bool {
				_, err := w.node(hostname)
				return !apierrors.IsNotFound(err)
			}, 5*installTime, 50*time.Millisecond, "a Node appeared for a refused install")
			w.assertNoSecrets(id, wrongToken)
			assert.NotContains(t, w.agent.NodeNames(), hostname)
			for _, e := range w.events(id) {
				assert.NotEqual(t, "harvester.install.started", e.GetType(), "a refused install never starts")
			}
		})
	}
}

// Single boot: the iPXE script reads the MAC of the NIC that answered DHCP and
// passes it on the kernel line, so the configuration lists no interfaces.
func TestSingleBootRegistersAReadyNode(t *testing.T) {
	w := newWorld(t)
	const hostname = "ja-single-boot"
	bond := map[string]string{"mode": "balance-tlb", "miimon": "100"}
	script, err := harvester.InstallerScriptURL(w.ipxeURL, version, equinixv1.BootModeSingleBoot, bond)
	require.NoError(t, err)
	in := w.joinInput(hostname)
	in.SingleBoot = true
	id := w.createDevice(hostname, metalv1.DeviceCreateInMetroInput{
		IpxeScriptUrl: metalv1.PtrString(script), Userdata: metalv1.PtrString(render(t, in)),
	})

	node := w.waitReady(hostname, corev1.ConditionTrue)
	assert.Equal(t, hostname, node.Labels[harvester.InstanceLabel])
	// The agent records its result just after it registers the Node, so the
	// Node can be Ready a moment before the result is there.
	var results []joinagent.Result
	require.Eventually(t, func() bool {
		results = w.agent.Results()
		return len(results) > 0
	}, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{strings.ToLower(w.mac(id, "eth0"))}, results[len(results)-1].MACs)
	w.assertNoSecrets(id)
}

// The hooks the health tests use move the Ready condition as a kubelet (or
// the node lifecycle controller) would.
func TestHooksDriveTheReadyCondition(t *testing.T) {
	w := newWorld(t)
	const hostname = "ja-hooks"
	id, _ := w.installTwoPhase(hostname)

	t.Run("SetNodeNotReady keeps the heartbeat and the given transition time", func(t *testing.T) {
		since := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
		require.NoError(t, w.agent.SetNodeNotReady(w.ctx, hostname, since))
		node, err := w.node(hostname)
		require.NoError(t, err)
		cond := ready(node)
		assert.Equal(t, corev1.ConditionFalse, cond.Status)
		assert.True(t, cond.LastTransitionTime.Time.Equal(since), "lastTransitionTime %s, want %s", cond.LastTransitionTime, since)

		w.waitHeartbeatAfter(hostname, cond.LastHeartbeatTime.Time)
		node, err = w.node(hostname)
		require.NoError(t, err)
		assert.Equal(t, corev1.ConditionFalse, ready(node).Status, "a heartbeat does not change the status")
		assert.True(t, ready(node).LastTransitionTime.Time.Equal(since), "a heartbeat does not move lastTransitionTime")
	})

	t.Run("SetNodeReady", func(t *testing.T) {
		before := time.Now().Truncate(time.Second)
		require.NoError(t, w.agent.SetNodeReady(w.ctx, hostname))
		node, err := w.node(hostname)
		require.NoError(t, err)
		assert.Equal(t, corev1.ConditionTrue, ready(node).Status)
		assert.False(t, ready(node).LastTransitionTime.Time.Before(before))
	})

	t.Run("ServerDown stops the heartbeat", func(t *testing.T) {
		require.NoError(t, w.agent.ServerDown(w.ctx, id))
		node, err := w.node(hostname)
		require.NoError(t, err)
		assert.Equal(t, corev1.ConditionUnknown, ready(node).Status)
		w.assertHeartbeatStopped(hostname)
	})

	t.Run("a reboot starts the kubelet again", func(*testing.T) {
		stopped := w.heartbeat(hostname)
		w.action(id, metalv1.DEVICEACTIONINPUTTYPE_REBOOT)
		w.waitReady(hostname, corev1.ConditionTrue)
		w.waitHeartbeatAfter(hostname, stopped)
	})

	t.Run("DeleteNode removes it for good", func(t *testing.T) {
		require.NoError(t, w.agent.DeleteNode(w.ctx, hostname))
		_, err := w.node(hostname)
		require.True(t, apierrors.IsNotFound(err), "node still there: %v", err)
		assert.Never(t, func() bool {
			_, err := w.node(hostname)
			return !apierrors.IsNotFound(err)
		}, 5*heartbeat, 50*time.Millisecond, "the deleted Node came back")
		assert.Empty(t, w.agent.NodeNames())
		require.NoError(t, w.agent.DeleteNode(w.ctx, hostname), "deleting twice is fine")
	})

	t.Run("unknown names are errors", func(t *testing.T) {
		assert.Error(t, w.agent.ServerDown(w.ctx, "no-such-device"))
		assert.Error(t, w.agent.SetNodeReady(w.ctx, "no-such-node"))
		assert.Error(t, w.agent.SetNodeNotReady(w.ctx, "no-such-node", time.Now()))
	})
}

// The Node follows what happens to its device through the API: power off
// stops the kubelet, power on starts it, a reinstall takes the node down
// until the new install registers, and deleting the device leaves the Node
// Unknown and no longer the agent's.
func TestNodeFollowsTheDevice(t *testing.T) {
	w := newWorld(t)
	const hostname = "ja-lifecycle"
	id, _ := w.installTwoPhase(hostname)

	w.action(id, metalv1.DEVICEACTIONINPUTTYPE_POWER_OFF)
	w.waitReady(hostname, corev1.ConditionUnknown)
	w.assertHeartbeatStopped(hostname)

	w.action(id, metalv1.DEVICEACTIONINPUTTYPE_POWER_ON)
	w.waitReady(hostname, corev1.ConditionTrue)
	w.waitHeartbeatAfter(hostname, w.heartbeat(hostname))

	w.action(id, metalv1.DEVICEACTIONINPUTTYPE_REINSTALL)
	w.waitReady(hostname, corev1.ConditionUnknown)
	w.waitReady(hostname, corev1.ConditionTrue)
	assert.Eventually(t, func() bool {
		succeeded := 0
		for _, e := range w.events(id) {
			if e.GetType() == "harvester.install.succeeded" {
				succeeded++
			}
		}
		return succeeded == 2
	}, wait, tick, "the reinstall did not install again")

	_, err := w.metal.DevicesApi.DeleteDevice(w.ctx, id).Execute()
	require.NoError(t, err)
	w.waitReady(hostname, corev1.ConditionUnknown)
	assert.Empty(t, w.agent.NodeNames())
	w.assertHeartbeatStopped(hostname)
}
