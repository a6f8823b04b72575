package hardware

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/pkg/config"
	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
)

// Fast polls: the events list and the termination list twice a second.
const fastInterval = 500 * time.Millisecond

// fastArgs are the binary's flags for the same.
var fastArgs = []string{"--device-events-interval", "500ms", "--termination-check-interval", "500ms"}

// newEnv is a world with the controller in-process (unless noController)
// polling fast.
func newEnv(t *testing.T, opts framework.Options) *framework.Env {
	t.Helper()
	configure := opts.Configure
	opts.Configure = func(c *config.Config) {
		c.DeviceEventsInterval = fastInterval
		c.TerminationCheckInterval = fastInterval
		if configure != nil {
			configure(c)
		}
	}
	return framework.New(t, &shared, opts)
}

// readyServer creates a one-server layer-3 pool and waits for it to be
// ready, returning the pool and its Instance.
func readyServer(t *testing.T, env *framework.Env, name string, edit func(*equinixv1.InstancePool)) (*equinixv1.InstancePool, equinixv1.Instance) {
	t.Helper()
	p := framework.SeedPoolWith(t, name, "")
	if edit != nil {
		edit(p)
	}
	pool := env.CreatePool(p)
	env.WaitPoolReady(pool.Name, 1, 2*time.Minute)
	insts := env.Instances(pool.Name)
	require.Len(t, insts, 1)
	return pool, insts[0]
}

func instance(t *testing.T, env *framework.Env, name string) *equinixv1.Instance {
	t.Helper()
	inst, err := env.Client.EquinixV1().Instances().Get(env.Ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	return inst
}

func node(t *testing.T, env *framework.Env, name string) *corev1.Node {
	t.Helper()
	n, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	return n
}

// patchSpec merge-patches an Instance's spec, as kubectl patch does.
func patchSpec(t *testing.T, env *framework.Env, name string, spec map[string]any) {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"spec": spec})
	require.NoError(t, err)
	_, err = env.Client.EquinixV1().Instances().Patch(env.Ctx, name, types.MergePatchType, raw, metav1.PatchOptions{})
	require.NoError(t, err)
}

// annotateNode sets (or with "" removes) a node annotation, as the
// Harvester UI's maintenance actions do.
func annotateNode(t *testing.T, env *framework.Env, name, key, value string) {
	t.Helper()
	var v any = value
	if value == "" {
		v = nil
	}
	raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}})
	require.NoError(t, err)
	_, err = env.Kube.CoreV1().Nodes().Patch(env.Ctx, name, types.MergePatchType, raw, metav1.PatchOptions{})
	require.NoError(t, err)
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// powerEvents counts the device's power actions the simulator carried out,
// from the device's own event log (one per action taken).
func powerEvents(t *testing.T, env *framework.Env, deviceID, typ string) int {
	t.Helper()
	n := 0
	evs, err := env.Sim.DeviceEvents(deviceID)
	require.NoError(t, err)
	for _, e := range evs {
		if e.GetType() == typ {
			n++
		}
	}
	return n
}

// forwarded maps each machine event ID forwarded as a Kubernetes Event to
// how many Events carry it.
func forwarded(t *testing.T, env *framework.Env) map[string]int {
	t.Helper()
	list, err := env.Kube.CoreV1().Events("").List(env.Ctx, metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]int{}
	for _, e := range list.Items {
		if id := e.Annotations[equinixv1.AnnotationMachineEventID]; id != "" {
			out[id]++
			require.EqualValues(t, 1, e.Count, "event %s counted again", e.Name)
		}
	}
	return out
}

// deviceEventIDs lists the IDs of a device's events in the simulator.
func deviceEventIDs(t *testing.T, env *framework.Env, deviceID string) []string {
	t.Helper()
	evs, err := env.Sim.DeviceEvents(deviceID)
	require.NoError(t, err)
	var ids []string
	for _, e := range evs {
		ids = append(ids, e.GetId())
	}
	return ids
}

func corev1NodeCondition(reason string) corev1.NodeCondition {
	now := metav1.Now()
	return corev1.NodeCondition{Type: harvester.NodeConditionMaintenanceMode, Status: corev1.ConditionTrue, Reason: reason,
		LastTransitionTime: now, LastHeartbeatTime: now}
}
