package joinagent

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/harvester/harvester-equinix-addon/pkg/metal/simulator"
)

// register creates the Node the installed server's kubelet would: named after
// os.hostname, with the install's labels, the device's addresses and a Ready
// condition.
func (a *Agent) register(ctx context.Context, n simulator.Notification, ic installConfig) error {
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
	created, err := a.opts.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = a.opts.Kube.CoreV1().Nodes().Get(ctx, ic.Hostname, metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	now := metav1.Now()
	status := corev1.NodeStatus{
		Addresses: nodeAddresses(n.Network, ic),
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now,
		}},
		NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion: a.opts.KubeletVersion, OSImage: "Harvester " + versionOf(ic.ISOURL),
			OperatingSystem: "linux", Architecture: "amd64", MachineID: n.DeviceID,
		},
	}
	// Controllers (the addon labels its nodes) may update the Node between our
	// create and this status write; a kubelet retries on conflict too.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		created.Status = status
		_, err := a.opts.Kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if fresh, gerr := a.opts.Kube.CoreV1().Nodes().Get(ctx, ic.Hostname, metav1.GetOptions{}); gerr == nil {
				created = fresh
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.nodes[ic.Hostname] = &nodeState{deviceID: n.DeviceID, heartbeat: true, mgmtMACs: ic.MACs, vlan: ic.VLANID}
	a.byDevice[n.DeviceID] = ic.Hostname
	a.mu.Unlock()
	return nil
}

func versionOf(iso string) string {
	for _, part := range strings.Split(iso, "/") {
		if strings.HasPrefix(part, "v") && strings.Count(part, ".") >= 2 && !strings.HasSuffix(part, ".iso") {
			return part
		}
	}
	return "unknown"
}

func nodeAddresses(ns simulator.NetworkState, ic installConfig) []corev1.NodeAddress {
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
		_ = a.updateReady(ctx, name, func(c *corev1.NodeCondition) {
			c.LastHeartbeatTime = metav1.Now()
		})
	}
}

func (a *Agent) updateReady(ctx context.Context, name string, mutate func(*corev1.NodeCondition)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := a.opts.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i := range node.Status.Conditions {
			if node.Status.Conditions[i].Type == corev1.NodeReady {
				mutate(&node.Status.Conditions[i])
			}
		}
		_, err = a.opts.Kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
}

func (a *Agent) setReady(ctx context.Context, name string, status corev1.ConditionStatus, reason, message string, since time.Time, heartbeat bool) error {
	a.mu.Lock()
	if st, ok := a.nodes[name]; ok {
		st.heartbeat = heartbeat
	}
	a.mu.Unlock()
	return a.updateReady(ctx, name, func(c *corev1.NodeCondition) {
		if c.Status != status {
			c.LastTransitionTime = metav1.NewTime(since)
		}
		c.Status, c.Reason, c.Message = status, reason, message
		if heartbeat {
			c.LastHeartbeatTime = metav1.Now()
		}
	})
}

// SetNodeNotReady makes a node report Ready=False since the given time while
// its kubelet keeps heartbeating (a fresh heartbeat with Ready=False).
func (a *Agent) SetNodeNotReady(ctx context.Context, name string, since time.Time) error {
	return a.setReady(ctx, name, corev1.ConditionFalse, "KubeletNotReady", "container runtime network not ready (simulated)", since, true)
}

// SetNodeReady makes a node Ready again.
func (a *Agent) SetNodeReady(ctx context.Context, name string) error {
	return a.setReady(ctx, name, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status", time.Now(), true)
}

// DeleteNode deletes the Node object, as an administrator would; the server's
// kubelet is treated as stopped and does not register again.
func (a *Agent) DeleteNode(ctx context.Context, name string) error {
	a.forget(name)
	err := a.opts.Kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// ServerDown stops a server's kubelet: heartbeats stop and the node goes
// Ready=Unknown, as the node lifecycle controller marks it after its grace
// period.
func (a *Agent) ServerDown(ctx context.Context, deviceID string) error {
	a.mu.Lock()
	name, ok := a.byDevice[deviceID]
	a.mu.Unlock()
	if !ok {
		return fmt.Errorf("device %s runs no node", deviceID)
	}
	return a.setReady(ctx, name, corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status.", time.Now(), false)
}

func (a *Agent) serverDown(deviceID, why string) {
	a.mu.Lock()
	name, ok := a.byDevice[deviceID]
	ctx := a.ctx
	a.mu.Unlock()
	if !ok || ctx == nil {
		return
	}
	if err := a.setReady(ctx, name, corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status: "+why, time.Now(), false); err != nil && !apierrors.IsNotFound(err) {
		a.opts.Log.Debugf("node %s: %v", name, err)
	}
	if strings.Contains(why, string(simulator.DeviceDeleted)) || strings.Contains(why, "deprovisioning") {
		a.forget(name)
	}
}

func (a *Agent) forget(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if st, ok := a.nodes[name]; ok {
		delete(a.byDevice, st.deviceID)
		delete(a.nodes, name)
	}
}

// networkChanged re-checks the management network of a running node after its
// ports changed: a conversion that cuts it makes the node NotReady, and fixing
// it makes the node Ready again.
func (a *Agent) networkChanged(n simulator.Notification) {
	a.mu.Lock()
	name, ok := a.byDevice[n.DeviceID]
	var st nodeState
	if ok {
		st = *a.nodes[name]
	}
	ctx := a.ctx
	a.mu.Unlock()
	if !ok || ctx == nil || !st.heartbeat {
		return
	}
	if err := reachable(n.Network, st.mgmtMACs, st.vlan); err != nil {
		_ = a.setReady(ctx, name, corev1.ConditionFalse, "NetworkUnavailable", "management network lost: "+err.Error(), time.Now(), true)
		return
	}
	_ = a.updateReady(ctx, name, func(c *corev1.NodeCondition) {
		if c.Reason == "NetworkUnavailable" {
			c.Status, c.Reason, c.Message = corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"
			c.LastTransitionTime = metav1.Now()
		}
	})
}
