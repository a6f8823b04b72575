package fencing

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
	"github.com/harvester/harvester-equinix-addon/pkg/conditions"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/metrics"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/bmcsim"
)

const (
	bmcUser     = "admin"
	bmcPassword = "Bmc-pw-never-shown-73"
	// ipmiPassword fits IPMI's 20 bytes.
	ipmiPassword = "Ipmi-pw-hidden-74"
	ns           = seederv1alpha1.InventoryNamespace
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
	env := framework.New(t, &shared, framework.Options{Mode: config.ModeSeeder, Configure: configure(s)})
	env.CreateReadyNode(ownNode)
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
	env.StartController(env.Config(framework.Options{Mode: config.ModeSeeder, Configure: configure(s)}))
}

// redfishHost is a Ready node (the controller's own exists already) with an Inventory whose BMC is a Redfish
// responder, once the Inventory took the BMC's credentials.
func redfishHost(t *testing.T, env *framework.Env, name string) (*bmcsim.BMC, *bmcsim.Server) {
	t.Helper()
	sim, srv := framework.RedfishBMC(t, bmcsim.Options{Username: bmcUser, Password: bmcPassword})
	if name != ownNode {
		env.CreateReadyNode(name)
	}
	env.CreateBMCSecret(name, bmcUser, bmcPassword)
	env.CreateInventory(framework.RedfishInventory(name, srv))
	authenticated(t, env, name)
	return sim, srv
}

// authenticated waits until the Inventory's BMC took the credentials.
func authenticated(t *testing.T, env *framework.Env, name string) {
	t.Helper()
	env.Eventually(func() bool {
		return conditions.IsTrue(env.Inventory(name).Status.Conditions, equinixv1.BMCAuthenticated)
	}, time.Minute, "the BMC of %s never took the credentials", name)
}

// fenced is the Inventory's Fenced condition, or nil.
func fenced(t *testing.T, env *framework.Env, name string) *metav1.Condition {
	t.Helper()
	return conditions.Get(env.Inventory(name).Status.Conditions, equinixv1.BMCFenced)
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
		if taint.Key == corev1.TaintNodeOutOfService && taint.Value == equinixv1.TaintOutOfServiceValue && taint.Effect == corev1.TaintEffectNoExecute {
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
