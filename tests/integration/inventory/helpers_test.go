package inventory

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
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
	// secretNamespace is where the UI's user keeps the BMC Secrets: any
	// namespace, here not the addon's.
	secretNamespace = "bmc-secrets"
	// pollEvery is the Inventories' spec.events.pollingInterval here.
	pollEvery = "1s"
	ns        = v1alpha1.InventoryNamespace
)

func configure(c *config.Config) {
	c.BMCTimeout = bmcTimeout
	c.SeederCheckInterval = 500 * time.Millisecond
}

func newEnv(t *testing.T) *framework.Env {
	t.Helper()
	return framework.New(t, &shared, framework.Options{Mode: config.ModeHardware, Configure: configure})
}

// restart stops the in-process controller and starts a new one, as a new
// pod would.
func restart(env *framework.Env) {
	env.StopController()
	env.StartController(env.Config(framework.Options{Mode: config.ModeHardware, Configure: configure}))
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
	t.Cleanup(func() { _ = env.Kube.CoreV1().Nodes().Delete(env.Ctx, name, metav1.DeleteOptions{}) })
}

// readyAgain is the kubelet coming back after the server restarted.
func readyAgain(t *testing.T, env *framework.Env, name string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, name, metav1.GetOptions{})
		require.NoError(ct, err)
		now := metav1.Now()
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: now, LastTransitionTime: now}}
		_, err = env.Kube.CoreV1().Nodes().UpdateStatus(env.Ctx, n, metav1.UpdateOptions{})
		require.NoError(ct, err)
	}, 10*time.Second, 100*time.Millisecond)
}

// maintenance puts a node into (or out of) Harvester maintenance mode as
// Harvester v1.8 marks it once drained: annotation
// harvesterhci.io/maintain-status, which its node actions read too.
func maintenance(t *testing.T, env *framework.Env, name string, on bool) {
	t.Helper()
	value := `"completed"`
	if !on {
		value = "null"
	}
	_, err := env.Kube.CoreV1().Nodes().Patch(env.Ctx, name, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+harvester.AnnotationMaintainStatus+`":`+value+`}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
}

// bmcSecret creates the BMC credentials as the UI's Add Secret does: in the
// namespace the user picks, keys username and password, no label.
func bmcSecret(t *testing.T, env *framework.Env, name, user, password string) {
	t.Helper()
	_, err := env.Kube.CoreV1().Namespaces().Create(env.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secretNamespace}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretNamespace, Name: name},
		Data: map[string][]byte{v1alpha1.SecretUsernameKey: []byte(user), v1alpha1.SecretPasswordKey: []byte(password)}}
	_, err = env.Kube.CoreV1().Secrets(secretNamespace).Create(env.Ctx, sec, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Kube.CoreV1().Secrets(secretNamespace).Delete(env.Ctx, name, metav1.DeleteOptions{}) })
}

// setPassword changes the Secret's password, as a user fixing it does.
func setPassword(t *testing.T, env *framework.Env, name, password string) {
	t.Helper()
	sec, err := env.Kube.CoreV1().Secrets(secretNamespace).Get(env.Ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	sec.Data[v1alpha1.SecretPasswordKey] = []byte(password)
	_, err = env.Kube.CoreV1().Secrets(secretNamespace).Update(env.Ctx, sec, metav1.UpdateOptions{})
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

// redfishInventory is the Inventory of node, named after it, whose BMC is
// srv (its port is not 623, so Redfish is spoken), trusting srv's CA: what
// a kubectl user writes (the UI has no CA field).
func redfishInventory(node string, srv *bmcsim.Server) *v1alpha1.Inventory {
	inv := &v1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: node}}
	inv.Spec.BaseboardManagementSpec.Connection = v1alpha1.Connection{
		Host: srv.Host, Port: srv.Port, CABundle: string(srv.CACertPEM),
		AuthSecretRef: corev1.SecretReference{Namespace: secretNamespace, Name: node},
	}
	inv.Spec.Events = v1alpha1.Events{Enabled: true, PollingInterval: pollEvery}
	return inv
}

// ipmiInventory is the Inventory of node whose BMC speaks IPMI on host and
// port. ipmi_sim cannot listen on 623 here (a privileged port, maybe taken),
// so providerOptions.ipmitool.port says where it is, with
// connection.port at the UI's 623.
func ipmiInventory(node, host string, port int) *v1alpha1.Inventory {
	inv := &v1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: node}}
	inv.Spec.BaseboardManagementSpec.Connection = v1alpha1.Connection{
		Host: host, Port: v1alpha1.IPMIPort,
		AuthSecretRef:   corev1.SecretReference{Namespace: secretNamespace, Name: node},
		ProviderOptions: &v1alpha1.ProviderOptions{IPMITOOL: &v1alpha1.IPMITOOLOptions{Port: port}},
	}
	inv.Spec.Events = v1alpha1.Events{Enabled: true, PollingInterval: pollEvery}
	return inv
}

func create(t *testing.T, env *framework.Env, inv *v1alpha1.Inventory) *v1alpha1.Inventory {
	t.Helper()
	out, err := env.Client.MetalV1alpha1().Inventories(inv.Namespace).Create(env.Ctx, inv, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Client.MetalV1alpha1().Inventories(inv.Namespace).Delete(env.Ctx, inv.Name, metav1.DeleteOptions{})
	})
	return out
}

func inventory(t *testing.T, env *framework.Env, name string) *v1alpha1.Inventory {
	t.Helper()
	inv, err := env.Client.MetalV1alpha1().Inventories(ns).Get(env.Ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	return inv
}

// hw is the addon's record of the Inventory's BMC.
func hw(t *testing.T, env *framework.Env, name string) v1alpha1.HardwareStatus {
	t.Helper()
	if h := inventory(t, env, name).Status.Hardware; h != nil {
		return *h
	}
	return v1alpha1.HardwareStatus{}
}

// hasCondition reports whether the Inventory's condition has status and
// reason.
func hasCondition(t *testing.T, env *framework.Env, name, typ string, status metav1.ConditionStatus, reason string) bool {
	c := conditions.Get(inventory(t, env, name).Status.Conditions, typ)
	return c != nil && c.Status == status && c.Reason == reason
}

// ready reports whether the Inventory is what Harvester requires before
// it offers power actions.
func ready(t *testing.T, env *framework.Env, name string) bool {
	return inventory(t, env, name).Status.Status == v1alpha1.InventoryNodeReady
}

// patchSpec merge-patches an Inventory's spec, as kubectl patch does.
func patchSpec(t *testing.T, env *framework.Env, name string, spec map[string]any) {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"spec": spec})
	require.NoError(t, err)
	_, err = env.Client.MetalV1alpha1().Inventories(ns).Patch(env.Ctx, name, types.MergePatchType, raw, metav1.PatchOptions{})
	require.NoError(t, err)
}

// requestPower asks for a power operation with the calls Harvester's
// powerAction makes (pkg/api/node formatter.go, v1.8.0): refused while the
// last request has no actionStatus; otherwise spec.powerActionRequested
// (an Update of the object read), then status.powerAction.lastJobName
// cleared on the object that Update returned (an UpdateStatus).
// tests/harvesterapi runs Harvester's own code; this is its calls for tests
// that need no Harvester binary.
func requestPower(t *testing.T, env *framework.Env, name, op string) error {
	t.Helper()
	invs := env.Client.MetalV1alpha1().Inventories(ns)
	inv, err := invs.Get(env.Ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	if inv.Spec.PowerActionRequested != "" && inv.Status.PowerAction.LastActionStatus == "" {
		return fmt.Errorf("waiting for power action status for action %s for node %s to be populated", inv.Spec.PowerActionRequested, name)
	}
	inv.Spec.PowerActionRequested = op
	updated, err := invs.Update(env.Ctx, inv, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	updated.Status.PowerAction.LastJobName = ""
	_, err = invs.UpdateStatus(env.Ctx, updated, metav1.UpdateOptions{})
	return err
}

// powerEnded waits until the last request ended and returns its
// actionStatus.
func powerEnded(t *testing.T, env *framework.Env, name string) string {
	t.Helper()
	var status string
	env.Eventually(func() bool {
		pa := inventory(t, env, name).Status.PowerAction
		status = pa.LastActionStatus
		return pa.LastJobName != "" && status != ""
	}, time.Minute, "the power request of %s did not end", name)
	return status
}

func node(t *testing.T, env *framework.Env, name string) *corev1.Node {
	t.Helper()
	n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	return n
}

// forwarded lists the Events forwarded from machine events about a node
// (or an Inventory): each machine event ID with its Events' messages.
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

// polls waits until the Inventory's BMC was polled n more times.
func polls(t *testing.T, env *framework.Env, name string, n int) {
	t.Helper()
	seen := 0
	var last time.Time
	if lp := hw(t, env, name).LastPolled; lp != nil {
		last = lp.Time
	}
	env.Eventually(func() bool {
		lp := hw(t, env, name).LastPolled
		if lp != nil && lp.After(last) {
			seen++
			last = lp.Time
		}
		return seen >= n
	}, time.Duration(n)*10*time.Second, "the BMC was not polled %d more times", n)
}
