package networking

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	"github.com/harvester/harvester-equinix-addon/tests/framework"
	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// metro is the seed's metro as the API names it.
const metro = "sg"

// portOperations are the Metal calls on ports; a converged device needs none.
var portOperations = map[string]bool{
	metalsim.OpFindPortByID: true, metalsim.OpAssignPort: true, metalsim.OpUnassignPort: true,
	metalsim.OpBondPort: true, metalsim.OpDisbondPort: true,
	metalsim.OpConvertLayer2: true, metalsim.OpConvertLayer3: true,
	metalsim.OpAssignNativeVlan: true, metalsim.OpDeleteNativeVlan: true,
}

// portNames maps the device's port IDs to their names, from the simulator's
// own state (no API request, so the request log stays the controller's).
func portNames(t *testing.T, env *framework.Env, deviceID string) map[string]string {
	t.Helper()
	dev, ok := env.Sim.Device(deviceID)
	require.True(t, ok, "device %s is not in the simulator", deviceID)
	out := map[string]string{}
	for _, p := range dev.GetNetworkPorts() {
		out[p.GetId()] = p.GetName()
	}
	return out
}

// portCall renders a logged port request as "operation port [query]".
func portCall(r metalsim.Request, names map[string]string) string {
	parts := strings.Split(strings.TrimPrefix(r.Path, "/metal/v1/ports/"), "/")
	name := names[parts[0]]
	if name == "" {
		name = parts[0]
	}
	s := r.Operation + " " + name
	if r.Query != "" {
		s += " ?" + r.Query
	}
	return s
}

// callsAroundReinstall splits the successful port calls of the log at the
// reinstall that started the installer.
func callsAroundReinstall(reqs []metalsim.Request, names map[string]string) (before, after []string, reinstalls int) {
	for _, r := range reqs {
		switch {
		case r.Operation == metalsim.OpPerformAction && r.Status < 300:
			reinstalls++
		case portOperations[r.Operation] && r.Status < 300:
			if reinstalls == 0 {
				before = append(before, portCall(r, names))
			} else {
				after = append(after, portCall(r, names))
			}
		}
	}
	return before, after, reinstalls
}

// countByOperation counts the logged requests per operation.
func countByOperation(reqs []metalsim.Request) map[string]int {
	out := map[string]int{}
	for _, r := range reqs {
		out[r.Operation]++
	}
	return out
}

func formatCounts(c map[string]int) string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c[k]))
	}
	return strings.Join(parts, " ")
}

// onlyInstance returns the pool's single Instance.
func onlyInstance(t *testing.T, env *framework.Env, pool string) equinixv1.Instance {
	t.Helper()
	insts := env.Instances(pool)
	require.Len(t, insts, 1)
	return insts[0]
}

// waitJoinedNetwork waits until the pool's single Instance has joined and its
// ports were converged to typ in the joined phase, then until the controller
// stopped calling the Metal API.
func waitJoinedNetwork(t *testing.T, env *framework.Env, pool, typ string) equinixv1.Instance {
	t.Helper()
	var inst equinixv1.Instance
	ok := assert.Eventually(t, func() bool {
		insts := env.Instances(pool)
		if len(insts) != 1 {
			return false
		}
		inst = insts[0]
		c := framework.Condition(&inst, equinixv1.InstanceNetworkConfigured)
		return inst.Status.JoinedAt != nil && c != nil && c.Status == metav1.ConditionTrue &&
			c.Message == fmt.Sprintf("ports of device %s match %s", inst.Status.InstanceID, typ)
	}, time.Minute, 100*time.Millisecond)
	if !ok {
		env.Dump(pool)
		t.FailNow()
	}
	settle(t, env)
	return onlyInstance(t, env, pool)
}

// settle waits until the simulator has seen no request for a second: the
// joined phase makes no periodic Metal call, so the log goes quiet once the
// chains are done.
func settle(t *testing.T, env *framework.Env) {
	t.Helper()
	last, since := -1, time.Now()
	env.Eventually(func() bool {
		if n := len(env.Sim.Requests()); n != last {
			last, since = n, time.Now()
			return false
		}
		return time.Since(since) >= time.Second
	}, 30*time.Second, "the controller kept calling the Metal API")
}

// nodeReady returns the Ready condition of a node.
func nodeReady(t *testing.T, env *framework.Env, name string) corev1.NodeCondition {
	t.Helper()
	node, err := env.Kube.CoreV1().Nodes().Get(env.Ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c
		}
	}
	t.Fatalf("node %s has no Ready condition", name)
	return corev1.NodeCondition{}
}

// updateInstance applies mutate to the latest Instance, retrying on conflict.
func updateInstance(t *testing.T, env *framework.Env, name string, mutate func(*equinixv1.Instance)) *equinixv1.Instance {
	t.Helper()
	var out *equinixv1.Instance
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		inst, err := env.Client.EquinixV1().Instances().Get(env.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(inst)
		out, err = env.Client.EquinixV1().Instances().Update(env.Ctx, inst, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err)
	return out
}

// updateInstanceStatus applies mutate to the latest Instance status.
func updateInstanceStatus(t *testing.T, env *framework.Env, name string, mutate func(*equinixv1.InstanceStatus)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		inst, err := env.Client.EquinixV1().Instances().Get(env.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(&inst.Status)
		_, err = env.Client.EquinixV1().Instances().UpdateStatus(env.Ctx, inst, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err)
}

// updatePool applies mutate to the latest pool, retrying on conflict.
func updatePool(t *testing.T, env *framework.Env, name string, mutate func(*equinixv1.InstancePool)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := env.Client.EquinixV1().InstancePools().Get(env.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(p)
		_, err = env.Client.EquinixV1().InstancePools().Update(env.Ctx, p, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err)
}

// touchInstance makes both Instance chains run again without changing
// anything they act on: an annotation and the SSH keys (read only when a
// device is created). The generation bump is the barrier: once the status
// reports it, the handlers have seen the change.
func touchInstance(t *testing.T, env *framework.Env, name string) {
	t.Helper()
	updated := updateInstance(t, env, name, func(i *equinixv1.Instance) {
		if i.Annotations == nil {
			i.Annotations = map[string]string{}
		}
		i.Annotations["test.equinix.harvesterhci.io/touched"] = time.Now().Format(time.RFC3339Nano)
		i.Spec.SSHKeys = append(i.Spec.SSHKeys, fmt.Sprintf("ssh-ed25519 AAAA%d test", len(i.Spec.SSHKeys)))
	})
	env.Eventually(func() bool {
		i, err := env.Client.EquinixV1().Instances().Get(env.Ctx, name, metav1.GetOptions{})
		return err == nil && i.Status.ObservedGeneration >= updated.Generation
	}, 30*time.Second, "instance %s did not observe generation %d", name, updated.Generation)
}

// portRequests returns the logged requests that touched ports.
func portRequests(reqs []metalsim.Request) []metalsim.Request {
	var out []metalsim.Request
	for _, r := range reqs {
		if portOperations[r.Operation] {
			out = append(out, r)
		}
	}
	return out
}

// bootRecorder keeps the network state of every reinstall boot: the ports
// the Harvester installer ran on.
type bootRecorder struct {
	mu    sync.Mutex
	boots []metalsim.NetworkState
}

func recordInstallerBoots(env *framework.Env) *bootRecorder {
	rec := &bootRecorder{}
	unsubscribe := env.Sim.Subscribe(func(n metalsim.Notification) {
		if n.Type == metalsim.DeviceBooted && n.Boot != nil && n.Boot.Reason == metalsim.BootReinstall {
			rec.mu.Lock()
			rec.boots = append(rec.boots, n.Network)
			rec.mu.Unlock()
		}
	})
	env.T.Cleanup(unsubscribe)
	return rec
}

func (b *bootRecorder) all() []metalsim.NetworkState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]metalsim.NetworkState(nil), b.boots...)
}

func portState(ns metalsim.NetworkState, name string) (metalsim.PortState, bool) {
	for _, p := range ns.Ports {
		if p.Name == name {
			return p, true
		}
	}
	return metalsim.PortState{}, false
}

func ints32(xs []int32) []int {
	out := make([]int, 0, len(xs))
	for _, x := range xs {
		out = append(out, int(x))
	}
	sort.Ints(out)
	return out
}
