package fencing

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
	"github.com/harvester/harvester-equinix-addon/pkg/simulator/bmcsim"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

const (
	bmcUser     = "admin"
	bmcPassword = "Bmc-pw-never-shown-73"
	// ipmiPassword fits IPMI's 20 bytes.
	ipmiPassword    = "Ipmi-pw-hidden-74"
	secretNamespace = "bmc-secrets"
	ns              = v1alpha1.InventoryNamespace
	// ownNode is the node the controller runs on here.
	ownNode = "hv-own"
	// grace is the grace period of these tests.
	grace = 2 * time.Second
)

// settings are a test's fencing settings.
type settings struct {
	maxFenced int
	powerOn   bool
}

func configure(s settings) func(*config.Config) {
	return func(c *config.Config) {
		c.BMCTimeout = time.Second
		c.SeederCheckInterval = 500 * time.Millisecond
		c.Fencing, c.FencingMaxFenced, c.FencingGracePeriod, c.FencingPowerOn = true, s.maxFenced, grace, s.powerOn
		c.NodeName = ownNode
	}
}

// newEnv starts a hardware-mode controller with fencing on, and the
// controller's own node, Ready.
func newEnv(t *testing.T, s settings) *framework.Env {
	t.Helper()
	if s.maxFenced == 0 {
		s.maxFenced = 1
	}
	env := framework.New(t, &shared, framework.Options{Mode: config.ModeHardware, Configure: configure(s)})
	createNode(t, env, ownNode)
	return env
}

// restart stops the in-process controller and starts a new one, as a new
// pod would.
func restart(env *framework.Env, s settings) {
	env.StopController()
	start(env, s)
}

func start(env *framework.Env, s settings) {
	if s.maxFenced == 0 {
		s.maxFenced = 1
	}
	env.StartController(env.Config(framework.Options{Mode: config.ModeHardware, Configure: configure(s)}))
}

// createNode registers a Ready node, as a kubelet does.
func createNode(t *testing.T, env *framework.Env, name string) {
	t.Helper()
	_, err := env.Kube.CoreV1().Nodes().Create(env.Ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Kube.CoreV1().Nodes().Delete(env.Ctx, name, metav1.DeleteOptions{}) })
	setReady(t, env, name, true)
}

// setReady writes the node's Ready condition, as its kubelet (Ready) or
// the node lifecycle controller (NotReady: Unknown) would.
func setReady(t *testing.T, env *framework.Env, name string, ready bool) {
	t.Helper()
	status, reason := corev1.ConditionTrue, "KubeletReady"
	if !ready {
		status, reason = corev1.ConditionUnknown, "NodeStatusUnknown"
	}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, name, metav1.GetOptions{})
		require.NoError(ct, err)
		now := metav1.Now()
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: reason,
			LastHeartbeatTime: now, LastTransitionTime: now}}
		_, err = env.Kube.CoreV1().Nodes().UpdateStatus(env.Ctx, n, metav1.UpdateOptions{})
		require.NoError(ct, err)
	}, 10*time.Second, 100*time.Millisecond)
}

// maintenance puts a node into Harvester maintenance mode, as Harvester
// marks it once drained.
func maintenance(t *testing.T, env *framework.Env, name string) {
	t.Helper()
	_, err := env.Kube.CoreV1().Nodes().Patch(env.Ctx, name, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+harvester.AnnotationMaintainStatus+`":"completed"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
}

func bmcSecret(t *testing.T, env *framework.Env, name, password string) {
	t.Helper()
	_, err := env.Kube.CoreV1().Namespaces().Create(env.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secretNamespace}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretNamespace, Name: name},
		Data: map[string][]byte{v1alpha1.SecretUsernameKey: []byte(bmcUser), v1alpha1.SecretPasswordKey: []byte(password)}}
	_, err = env.Kube.CoreV1().Secrets(secretNamespace).Create(env.Ctx, sec, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Kube.CoreV1().Secrets(secretNamespace).Delete(env.Ctx, name, metav1.DeleteOptions{}) })
}

// redfishHost is a Ready node (the controller's own exists already) with an Inventory whose BMC is a Redfish
// responder, once the Inventory took the BMC's credentials.
func redfishHost(t *testing.T, env *framework.Env, name string) (*bmcsim.BMC, *bmcsim.Server) {
	t.Helper()
	sim := bmcsim.New(bmcsim.Options{Username: bmcUser, Password: bmcPassword})
	srv, err := bmcsim.NewServer(sim, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	if name != ownNode {
		createNode(t, env, name)
	}
	bmcSecret(t, env, name, bmcPassword)
	inv := &v1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	inv.Spec.BaseboardManagementSpec.Connection = v1alpha1.Connection{
		Host: srv.Host, Port: srv.Port, CABundle: string(srv.CACertPEM),
		AuthSecretRef: corev1.SecretReference{Namespace: secretNamespace, Name: name},
	}
	inv.Spec.Events = v1alpha1.Events{Enabled: true, PollingInterval: "1s"}
	create(t, env, inv)
	authenticated(t, env, name)
	return sim, srv
}

func create(t *testing.T, env *framework.Env, inv *v1alpha1.Inventory) {
	t.Helper()
	_, err := env.Client.MetalV1alpha1().Inventories(ns).Create(env.Ctx, inv, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Client.MetalV1alpha1().Inventories(ns).Delete(env.Ctx, inv.Name, metav1.DeleteOptions{})
	})
}

// authenticated waits until the Inventory's BMC took the credentials.
func authenticated(t *testing.T, env *framework.Env, name string) {
	t.Helper()
	env.Eventually(func() bool {
		return conditions.IsTrue(inventory(t, env, name).Status.Conditions, v1.BMCAuthenticated)
	}, time.Minute, "the BMC of %s never took the credentials", name)
}

func inventory(t *testing.T, env *framework.Env, name string) *v1alpha1.Inventory {
	t.Helper()
	inv, err := env.Client.MetalV1alpha1().Inventories(ns).Get(env.Ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	return inv
}

// fenced is the Inventory's Fenced condition, or nil.
func fenced(t *testing.T, env *framework.Env, name string) *metav1.Condition {
	t.Helper()
	return conditions.Get(inventory(t, env, name).Status.Conditions, v1.BMCFenced)
}

// fenceReason waits until the Fenced condition has status and reason.
func fenceReason(t *testing.T, env *framework.Env, name string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	var c *metav1.Condition
	env.Eventually(func() bool {
		c = fenced(t, env, name)
		return c != nil && c.Status == status && c.Reason == reason
	}, time.Minute, "Fenced of %s never was %s/%s (last %s)", name, status, reason, describe(c))
	return c
}

func describe(c *metav1.Condition) string {
	if c == nil {
		return "none"
	}
	return fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
}

// tainted reports whether the node carries the out-of-service taint.
func tainted(t *testing.T, env *framework.Env, name string) bool {
	t.Helper()
	n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	for _, taint := range n.Spec.Taints {
		if taint.Key == corev1.TaintNodeOutOfService && taint.Value == v1.TaintOutOfServiceValue && taint.Effect == corev1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

// nodeEvent reports whether an Event of reason was recorded about the
// node (the Node, not its Inventory).
func nodeEvent(env *framework.Env, name, reason string) bool {
	for _, e := range env.Events(name) {
		if e.InvolvedObject.Kind == "Node" && e.Reason == reason {
			return true
		}
	}
	return false
}

// passes waits for n more polls of the Inventory's BMC: the controller
// had that many chances to act.
func passes(t *testing.T, env *framework.Env, name string, n int) {
	t.Helper()
	seen := 0
	var last time.Time
	if hw := inventory(t, env, name).Status.Hardware; hw != nil && hw.LastPolled != nil {
		last = hw.LastPolled.Time
	}
	env.Eventually(func() bool {
		hw := inventory(t, env, name).Status.Hardware
		if hw != nil && hw.LastPolled != nil && hw.LastPolled.After(last) {
			seen++
			last = hw.LastPolled.Time
		}
		return seen >= n
	}, time.Duration(n)*10*time.Second, "the BMC of %s was not polled %d more times", name, n)
}

// ipmiInventory is the Inventory of node whose BMC speaks IPMI on host
// and port (ipmi_sim cannot listen on 623 here).
func ipmiInventory(node, host string, port int) *v1alpha1.Inventory {
	inv := &v1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: node}}
	inv.Spec.BaseboardManagementSpec.Connection = v1alpha1.Connection{
		Host: host, Port: v1alpha1.IPMIPort,
		AuthSecretRef:   corev1.SecretReference{Namespace: secretNamespace, Name: node},
		ProviderOptions: &v1alpha1.ProviderOptions{IPMITOOL: &v1alpha1.IPMITOOLOptions{Port: port}},
	}
	inv.Spec.Events = v1alpha1.Events{Enabled: true, PollingInterval: "1s"}
	return inv
}

func contains(s, part string) bool { return strings.Contains(s, part) }

// metric is the value of the series of name whose labels include want
// (the controller runs in this process, so its registry is this one).
func metric(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	families, err := metrics.Registerer().(prometheus.Gatherer).Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
					continue series
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
