package joinagent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/harvester/harvester-equinix-addon/tests/sim/metalsim"
)

// register creates the Node the installed server's kubelet would: named after
// os.hostname, with the install's labels, the device's addresses and a Ready
// condition.
func (a *Agent) register(ctx context.Context, n metalsim.Notification, ic Install) error {
	labels := map[string]string{
		"harvesterhci.io/managed": "true",
		"kubernetes.io/hostname":  ic.Hostname,
		"kubernetes.io/os":        "linux",
		"kubernetes.io/arch":      "amd64",
	}
	for k, v := range ic.Labels {
		labels[k] = v
	}
	if ic.Role != "" {
		labels["node-role.harvesterhci.io/"+ic.Role] = "true"
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ic.Hostname, Labels: labels}}
	if a.opts.ProviderIDPrefix != "" {
		node.Spec.ProviderID = a.opts.ProviderIDPrefix + ic.Hostname
	}
	addresses := nodeAddresses(n.Network, ic)
	if a.opts.ExternalCloudProvider {
		node.Spec.Taints = []corev1.Taint{{Key: taintUninitialized, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
		addresses = nil
	}
	// The server is the agent's before it registers: a stop that comes
	// while the Node is written (or the apiserver is away) then finds it,
	// and queues its Ready=Unknown behind this write, instead of leaving a
	// Ready Node that heartbeats for a server that is off or gone.
	st := &nodeState{deviceID: n.DeviceID, heartbeat: true, mgmtMACs: ic.MACs, vlan: ic.VLANID, network: n.Network}
	a.run(n.DeviceID, ic.Hostname, st)
	var created *corev1.Node
	// A kubelet keeps trying to register while the apiserver is away (a
	// restart, an upgrade); giving up would leave a server that never joins.
	err := retryFor(ctx, transient, func() (err error) {
		created, err = a.opts.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			created, err = a.opts.Kube.CoreV1().Nodes().Get(ctx, ic.Hostname, metav1.GetOptions{})
		}
		return err
	})
	if err != nil {
		// No Node: the server is not the agent's after all, or its
		// heartbeats would go to a Node that does not exist.
		a.forgetIf(ic.Hostname, st)
		return err
	}
	now := metav1.Now()
	status := corev1.NodeStatus{
		Addresses: addresses,
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: reasonReady,
			Message: messageReady, LastHeartbeatTime: now, LastTransitionTime: now,
		}},
		NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion: a.opts.KubeletVersion, OSImage: "Harvester " + versionOf(ic.ISOURL),
			OperatingSystem: "linux", Architecture: "amd64", MachineID: n.DeviceID,
		},
	}
	// Controllers (the addon labels its nodes) may update the Node between our
	// create and this status write; a kubelet retries on conflict too.
	// A conflict is retried at once on a fresh read; only an unreachable
	// apiserver is waited for. (Waiting on conflicts too made every write
	// of the agent's serial queue slow at 2,000 servers.)
	err = retryFor(ctx, transient, func() error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if a.opts.ExternalCloudProvider {
				// Such a kubelet leaves the addresses to the cloud
				// controller, which may have set them already.
				status.Addresses = created.Status.Addresses
			}
			created.Status = status
			_, err := a.opts.Kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				if fresh, gerr := a.opts.Kube.CoreV1().Nodes().Get(ctx, ic.Hostname, metav1.GetOptions{}); gerr == nil {
					created = fresh
				}
			}
			return err
		})
	})
	if err != nil {
		a.forgetIf(ic.Hostname, st)
		return err
	}
	return nil
}

// run makes the node the device's running kubelet. A device reinstalled
// under a new hostname leaves its old Node behind (Unknown since the
// reinstall), and a hostname reused by another device moves the Node to it.
func (a *Agent) run(deviceID, hostname string, st *nodeState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.byDevice[deviceID]; ok {
		a.forgetLocked(old)
	}
	a.forgetLocked(hostname)
	a.nodes[hostname] = st
	a.byDevice[deviceID] = hostname
}

// forgetIf forgets the node unless another registration has taken its name.
func (a *Agent) forgetIf(name string, st *nodeState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.nodes[name] == st {
		a.forgetLocked(name)
	}
}

// Registration is retried for registerPatience, longer than a kube-apiserver
// restart takes, at delays growing to registerBackoff's cap.
var (
	registerBackoff  = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 1.5, Jitter: 0.1, Cap: 5 * time.Second, Steps: math.MaxInt32}
	registerPatience = 2 * time.Minute
)

// retryFor runs fn until it succeeds, fails for good, registerPatience has
// passed or ctx ends. (retry.OnError would stop once the delay reaches the
// backoff's cap: wait.Backoff zeroes its steps there.)
func retryFor(ctx context.Context, retriable func(error) bool, fn func() error) error {
	b := registerBackoff
	deadline := time.Now().Add(registerPatience)
	for {
		err := fn()
		if err == nil || !retriable(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(b.Step()):
		}
	}
}

// transient tells a failure worth retrying (the apiserver unreachable,
// overloaded or restarting) from an answer (invalid, forbidden).
func transient(err error) bool {
	if err == nil {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true // no answer at all: refused, reset, timed out
	}
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err) || apierrors.IsUnexpectedServerError(err)
}

func versionOf(iso string) string {
	for _, part := range strings.Split(iso, "/") {
		if strings.HasPrefix(part, "v") && strings.Count(part, ".") >= 2 && !strings.HasSuffix(part, ".iso") {
			return part
		}
	}
	return "unknown"
}

func nodeAddresses(ns metalsim.NetworkState, ic Install) []corev1.NodeAddress {
	out := []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: ic.Hostname}}
	if ic.VLANID != 0 {
		// A layer-2 management network gets its address from the VLAN's DHCP.
		last := 0
		for _, c := range strings.ToLower(strings.Join(ic.MACs, "")) {
			last = (last*31 + int(c)) % 250
		}
		return append(out, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("192.168.%d.%d", ic.VLANID%256, last+2)})
	}
	for _, addr := range ns.Addresses {
		if addr.Family != 4 {
			continue
		}
		t := corev1.NodeInternalIP
		if addr.Public {
			t = corev1.NodeExternalIP
		}
		out = append(out, corev1.NodeAddress{Type: t, Address: addr.Address})
	}
	return out
}

// taintUninitialized keeps pods off a Node until a cloud controller
// initialized it.
const taintUninitialized = "node.cloudprovider.kubernetes.io/uninitialized"

// Ready condition reasons, as a kubelet and the node lifecycle controller post them.
const (
	reasonReady    = "KubeletReady"
	messageReady   = "kubelet is posting ready status"
	reasonNotReady = "KubeletNotReady"
	reasonUnknown  = "NodeStatusUnknown"
	reasonNetwork  = "NetworkUnavailable"
)

// readyState is a Ready condition to post.
type readyState struct {
	status  corev1.ConditionStatus
	reason  string
	message string
}

func readyChange(status corev1.ConditionStatus, reason, message string) readyState {
	return readyState{status: status, reason: reason, message: message}
}

// at returns the mutation that posts r. lastTransitionTime becomes since when
// the status changes, or always with force (a caller naming the time). Only a
// running kubelet posts True or False, and it refreshes the heartbeat as it
// does; Unknown comes from the node lifecycle controller, which does not.
func (r readyState) at(since time.Time, force bool) func(*corev1.NodeCondition) bool {
	return func(c *corev1.NodeCondition) bool {
		if force || c.Status != r.status {
			c.LastTransitionTime = metav1.NewTime(since)
		}
		c.Status, c.Reason, c.Message = r.status, r.reason, r.message
		if r.status != corev1.ConditionUnknown {
			c.LastHeartbeatTime = metav1.Now()
		}
		return true
	}
}

// heartbeat refreshes lastHeartbeatTime of every running node, whatever its
// Ready status: a kubelet that reports NotReady keeps heartbeating.
func (a *Agent) heartbeat(ctx context.Context) {
	a.mu.Lock()
	var names []string
	for name, st := range a.nodes {
		if st.heartbeat {
			names = append(names, name)
		}
	}
	a.mu.Unlock()
	for _, name := range names {
		err := a.updateReady(ctx, name, func(c *corev1.NodeCondition) bool {
			// The server may have stopped since the names were collected;
			// re-checking here, on every conflict retry, keeps a late beat
			// from landing after Ready=Unknown.
			if !a.beating(name) {
				return false
			}
			c.LastHeartbeatTime = metav1.Now()
			return true
		})
		if err != nil && !apierrors.IsNotFound(err) {
			a.opts.Log.Debugf("node %s: heartbeat: %v", name, err)
		}
	}
}

func (a *Agent) beating(name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.nodes[name]
	return ok && st.heartbeat
}

// updateReady applies mutate to the Node's Ready condition and writes the
// status, unless mutate returns false.
func (a *Agent) updateReady(ctx context.Context, name string, mutate func(*corev1.NodeCondition) bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := a.opts.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		changed := false
		for i := range node.Status.Conditions {
			if node.Status.Conditions[i].Type == corev1.NodeReady {
				changed = mutate(&node.Status.Conditions[i])
			}
		}
		if !changed {
			return nil
		}
		_, err = a.opts.Kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
}

// setKubelet marks whether the node's kubelet runs and posts r. It reports
// an unknown node as an error, for the test hooks.
func (a *Agent) setKubelet(ctx context.Context, name string, running bool, r readyState, since time.Time, force bool) error {
	a.mu.Lock()
	st, ok := a.nodes[name]
	if ok {
		st.heartbeat = running
	}
	a.mu.Unlock()
	if !ok {
		return fmt.Errorf("node %s is not run by the join agent", name)
	}
	if err := a.updateReady(ctx, name, r.at(since, force)); err != nil {
		return fmt.Errorf("node %s: %w", name, err)
	}
	return nil
}

// SetNodeNotReady makes a node report Ready=False since the given time while
// its kubelet keeps heartbeating (a fresh heartbeat with Ready=False).
func (a *Agent) SetNodeNotReady(ctx context.Context, name string, since time.Time) error {
	return a.setKubelet(ctx, name, true, readyChange(corev1.ConditionFalse, reasonNotReady, "container runtime network not ready (simulated)"), since, true)
}

// SetNodeReady makes a node Ready again, its kubelet running.
func (a *Agent) SetNodeReady(ctx context.Context, name string) error {
	return a.setKubelet(ctx, name, true, readyChange(corev1.ConditionTrue, reasonReady, messageReady), time.Now(), false)
}

// DeleteNode deletes the Node object, as an administrator would; the server's
// kubelet is treated as stopped and does not register again.
func (a *Agent) DeleteNode(ctx context.Context, name string) error {
	a.forget(name)
	err := a.opts.Kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting node %s: %w", name, err)
	}
	return nil
}

// ServerDown stops a server's kubelet: heartbeats stop and the node goes
// Ready=Unknown, as the node lifecycle controller marks it after its grace
// period. Powering the device on or rebooting it through the API starts the
// kubelet again.
func (a *Agent) ServerDown(ctx context.Context, deviceID string) error {
	a.mu.Lock()
	name, ok := a.byDevice[deviceID]
	a.mu.Unlock()
	if !ok {
		return fmt.Errorf("device %s runs no node", deviceID)
	}
	return a.setKubelet(ctx, name, false, readyChange(corev1.ConditionUnknown, reasonUnknown, "Kubelet stopped posting node status."), time.Now(), false)
}

// stopped handles a server that stopped running its kubelet: heartbeats stop
// at once and Ready=Unknown is queued. With forget the server is gone for
// good, so the node is no longer the agent's.
func (a *Agent) stopped(deviceID, why string, forget bool) {
	a.mu.Lock()
	name, ok := a.byDevice[deviceID]
	if ok {
		a.nodes[name].heartbeat = false
		if forget {
			a.forgetLocked(name)
		}
	}
	a.mu.Unlock()
	if !ok {
		return
	}
	at := time.Now()
	a.writes.push(func(ctx context.Context) {
		r := readyChange(corev1.ConditionUnknown, reasonUnknown, "Kubelet stopped posting node status: "+why)
		if err := a.updateReady(ctx, name, r.at(at, false)); err != nil && !apierrors.IsNotFound(err) {
			a.opts.Log.Debugf("node %s: %v", name, err)
		}
	})
}

func (a *Agent) forget(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.forgetLocked(name)
}

func (a *Agent) forgetLocked(name string) {
	if st, ok := a.nodes[name]; ok {
		if a.byDevice[st.deviceID] == name {
			delete(a.byDevice, st.deviceID)
		}
		delete(a.nodes, name)
	}
}

// networkChanged re-checks the management network of a running node after its
// ports changed. A cut shorter than Options.NetworkGrace does not show, as
// with a real kubelet: a conversion that moves the management VLAN from one
// port to another takes a few calls. One that lasts makes the node NotReady,
// and fixing it makes the node Ready again at once.
func (a *Agent) networkChanged(ctx context.Context, n metalsim.Notification) {
	a.mu.Lock()
	name, ok := a.byDevice[n.DeviceID]
	var st nodeState
	if ok {
		a.nodes[name].network = n.Network
		st = *a.nodes[name]
	}
	a.mu.Unlock()
	if !ok || !st.heartbeat {
		return
	}
	if lost := reachable(n.Network, st.mgmtMACs, st.vlan); lost != nil {
		time.AfterFunc(a.opts.NetworkGrace, func() {
			a.writes.push(func(ctx context.Context) { a.checkNetwork(ctx, name) })
		})
		return
	}
	a.networkReady(ctx, name, nil)
}

// checkNetwork sets a running node's Ready condition from its latest ports,
// once a cut has lasted the grace.
func (a *Agent) checkNetwork(ctx context.Context, name string) {
	a.mu.Lock()
	var st nodeState
	ok := a.nodes[name] != nil
	if ok {
		st = *a.nodes[name]
	}
	a.mu.Unlock()
	if !ok || !st.heartbeat {
		return
	}
	a.networkReady(ctx, name, reachable(st.network, st.mgmtMACs, st.vlan))
}

// networkReady makes a running node NotReady for a lost management network,
// or Ready again when the network was what kept it NotReady.
func (a *Agent) networkReady(ctx context.Context, name string, lost error) {
	err := a.updateReady(ctx, name, func(c *corev1.NodeCondition) bool {
		if !a.beating(name) {
			return false
		}
		switch {
		case lost != nil:
			return readyChange(corev1.ConditionFalse, reasonNetwork, "management network lost: "+lost.Error()).at(time.Now(), false)(c)
		case c.Reason == reasonNetwork:
			return readyChange(corev1.ConditionTrue, reasonReady, messageReady).at(time.Now(), false)(c)
		}
		return false
	})
	if err != nil && !apierrors.IsNotFound(err) {
		a.opts.Log.Debugf("node %s: %v", name, err)
	}
}
