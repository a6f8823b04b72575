package bmcinventory

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/pkg/simulator/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

const (
	bmcUser     = "admin"
	bmcPassword = "Bmc-pw-never-shown-41"
	// ipmiPassword fits IPMI's 20 bytes.
	ipmiPassword = "Ipmi-pw-hidden-52"
	// bmcTimeout bounds one BMC request in these tests: a slow BMC is one
	// slower than that.
	bmcTimeout = time.Second
)

// pollEvery is the inventories' poll interval here.
var pollEvery = metav1.Duration{Duration: time.Second}

func configure(c *config.Config) { c.BMCTimeout = bmcTimeout }

func newEnv(t *testing.T) *framework.Env {
	t.Helper()
	return framework.New(t, &shared, framework.Options{Configure: configure})
}

// restart stops the in-process controller and starts a new one, as a new
// pod would.
func restart(env *framework.Env) {
	env.StopController()
	env.StartController(env.Config(framework.Options{Configure: configure}))
}

// createNode registers a Ready node as a kubelet of a server the addon
// did not provision would.
func createNode(t *testing.T, env *framework.Env, name string) {
	t.Helper()
	n, err := env.Kube.CoreV1().Nodes().Create(env.Ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	now := metav1.Now()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: now, LastTransitionTime: now}}
	_, err = env.Kube.CoreV1().Nodes().UpdateStatus(env.Ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// setNodeCondition sets one condition of a node, as the kubelet (Ready)
// and Harvester (MaintenanceMode) do.
func setNodeCondition(t *testing.T, env *framework.Env, name string, c corev1.NodeCondition) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, name, metav1.GetOptions{})
		if err != nil {
			ct.Errorf("%v", err)
			return
		}
		now := metav1.Now()
		c.LastHeartbeatTime, c.LastTransitionTime = now, now
		kept := n.Status.Conditions[:0]
		for _, old := range n.Status.Conditions {
			if old.Type != c.Type {
				kept = append(kept, old)
			}
		}
		n.Status.Conditions = append(kept, c)
		if _, err := env.Kube.CoreV1().Nodes().UpdateStatus(env.Ctx, n, metav1.UpdateOptions{}); err != nil {
			ct.Errorf("%v", err)
		}
	}, 10*time.Second, 100*time.Millisecond)
}

// readyAgain is the kubelet coming back after the server restarted.
func readyAgain(t *testing.T, env *framework.Env, name string) {
	setNodeCondition(t, env, name, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"})
}

// maintenance puts a node into (or out of) Harvester maintenance mode as
// Harvester reports it once the node is drained.
func maintenance(t *testing.T, env *framework.Env, name string, on bool) {
	status := corev1.ConditionFalse
	if on {
		status = corev1.ConditionTrue
	}
	setNodeCondition(t, env, name, corev1.NodeCondition{Type: harvester.NodeConditionMaintenanceMode, Status: status,
		Reason: harvester.MaintenanceReasonCompleted})
}

// bmcSecret creates the credentials Secret as docs/bmc.md tells.
func bmcSecret(t *testing.T, env *framework.Env, name, user, password string) {
	t.Helper()
	sec := framework.CredentialsSecret(name, map[string][]byte{"username": []byte(user), "password": []byte(password)})
	_, err := env.Kube.CoreV1().Secrets(framework.Namespace).Create(env.Ctx, sec, metav1.CreateOptions{})
	require.NoError(t, err)
}

// redfishBMC starts a Redfish BMC with the test's credentials.
func redfishBMC(t *testing.T) (*bmcsim.BMC, *bmcsim.Server) {
	t.Helper()
	return redfishBMCWith(t, bmcsim.Options{})
}

// redfishBMCWith starts a Redfish BMC shaped by opts, with the test's
// credentials.
func redfishBMCWith(t *testing.T, opts bmcsim.Options) (*bmcsim.BMC, *bmcsim.Server) {
	t.Helper()
	opts.Username, opts.Password = bmcUser, bmcPassword
	sim := bmcsim.New(opts)
	srv, err := bmcsim.NewServer(sim, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return sim, srv
}

// redfishInventory maps node to srv, trusting its CA.
func redfishInventory(name, node string, srv *bmcsim.Server) *v1.BMCInventory {
	return &v1.BMCInventory{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.BMCInventorySpec{
			NodeName:          node,
			BMC:               v1.BMCEndpoint{Protocol: v1.BMCProtocolRedfish, Host: srv.Host, Port: int32(srv.Port), CABundle: string(srv.CACertPEM)},
			CredentialsSecret: v1.SecretReference{Name: name},
			PollInterval:      &pollEvery,
		},
	}
}

func create(t *testing.T, env *framework.Env, inv *v1.BMCInventory) *v1.BMCInventory {
	t.Helper()
	out, err := env.Client.EquinixV1().BMCInventories().Create(env.Ctx, inv, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Client.EquinixV1().BMCInventories().Delete(env.Ctx, inv.Name, metav1.DeleteOptions{})
	})
	return out
}

func inventory(t *testing.T, env *framework.Env, name string) *v1.BMCInventory {
	t.Helper()
	inv, err := env.Client.EquinixV1().BMCInventories().Get(env.Ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	return inv
}

// hasCondition reports whether the inventory's condition has status and
// reason.
func hasCondition(t *testing.T, env *framework.Env, name, typ string, status metav1.ConditionStatus, reason string) bool {
	c := conditions.Get(inventory(t, env, name).Status.Conditions, typ)
	return c != nil && c.Status == status && c.Reason == reason
}

// patchSpec merge-patches an inventory's spec, as kubectl patch does.
func patchSpec(t *testing.T, env *framework.Env, name string, spec map[string]any) {
	t.Helper()
	require.NoError(t, patch(t, env, name, spec))
}

// patch is patchSpec returning the API's answer.
func patch(t *testing.T, env *framework.Env, name string, spec map[string]any) error {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"spec": spec})
	require.NoError(t, err)
	_, err = env.Client.EquinixV1().BMCInventories().Patch(env.Ctx, name, types.MergePatchType, raw, metav1.PatchOptions{})
	return err
}

func node(t *testing.T, env *framework.Env, name string) *corev1.Node {
	t.Helper()
	n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	return n
}

// forwarded lists the Events forwarded from machine events about a node
// (or an inventory): each machine event ID with its Events' messages.
func forwarded(t *testing.T, env *framework.Env, subject string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, e := range env.Events(subject) {
		if id := e.Annotations[v1.AnnotationMachineEventID]; id != "" {
			out[id] = append(out[id], e.Message)
			require.EqualValues(t, 1, e.Count, "event %s counted again", e.Name)
		}
	}
	return out
}

// messages is every forwarded message, once per Event.
func messages(fw map[string][]string) []string {
	var out []string
	for _, ms := range fw {
		out = append(out, ms...)
	}
	return out
}

// countHolding counts the messages holding part.
func countHolding(msgs []string, part string) int {
	n := 0
	for _, m := range msgs {
		if strings.Contains(m, part) {
			n++
		}
	}
	return n
}

// polls waits until the inventory was polled n more times.
func polls(t *testing.T, env *framework.Env, name string, n int) {
	t.Helper()
	seen := 0
	var last time.Time
	if lp := inventory(t, env, name).Status.LastPolled; lp != nil {
		last = lp.Time
	}
	env.Eventually(func() bool {
		lp := inventory(t, env, name).Status.LastPolled
		if lp != nil && lp.After(last) {
			seen++
			last = lp.Time
		}
		return seen >= n
	}, time.Duration(n)*10*time.Second, "the BMC was not polled %d more times", n)
}
