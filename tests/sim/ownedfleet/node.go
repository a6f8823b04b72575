package ownedfleet

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/harvester/harvester-equinix-addon/pkg/harvester"
	"github.com/harvester/harvester-equinix-addon/tests/sim/joinagent"
)

// Ready condition reasons, as a kubelet and the node lifecycle controller
// post them.
const (
	reasonReady    = "KubeletReady"
	messageReady   = "kubelet is posting ready status"
	reasonUnknown  = "NodeStatusUnknown"
	messageStopped = "Kubelet stopped posting node status."
)

// finishInstall registers the installed server's Node, as its kubelet
// does on first boot.
func (s *server) finishInstall(ctx context.Context, r Result, in joinagent.Install) {
	arch, _ := harvester.NormalizeArch(s.spec.Arch)
	labels := map[string]string{
		"harvesterhci.io/managed": "true",
		"kubernetes.io/hostname":  in.Hostname,
		"kubernetes.io/os":        "linux",
		"kubernetes.io/arch":      arch,
	}
	maps.Copy(labels, in.Labels)
	if in.Role != "" {
		labels["node-role.harvesterhci.io/"+in.Role] = "true"
	}
	s.hostname, s.labels = in.Hostname, labels
	if err := s.register(ctx, arch); err != nil {
		if ctx.Err() != nil {
			return
		}
		r.Reason = "node registration failed: " + err.Error()
		s.fleet.record(r)
		return
	}
	s.running = true
	s.setSnapshot()
	r.OK = true
	s.fleet.record(r)
	s.fleet.opts.Log.Infof("server %s: node %s joined the cluster", s.spec.Name, in.Hostname)
}

func (s *server) register(ctx context.Context, arch string) error {
	nodes := s.fleet.opts.Kube.CoreV1().Nodes()
	node, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: s.hostname, Labels: s.labels}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// A reinstall under the same name: the kubelet takes the Node over.
		node, err = nodes.Get(ctx, s.hostname, metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	now := metav1.Now()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node.Status = corev1.NodeStatus{
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: s.hostname}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: reasonReady,
				Message: messageReady, LastHeartbeatTime: now, LastTransitionTime: now}},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: s.fleet.opts.KubeletVersion, OSImage: "Harvester " + s.fleet.opts.Version,
				OperatingSystem: "linux", Architecture: arch, SystemUUID: s.spec.UUID, MachineID: s.spec.Name},
		}
		_, err := nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if fresh, gerr := nodes.Get(ctx, s.hostname, metav1.GetOptions{}); gerr == nil {
				node = fresh
			}
		}
		return err
	})
}

// startKubelet: the installed OS booted from disk.
func (s *server) startKubelet(ctx context.Context) {
	s.running = true
	s.setSnapshot()
	s.setReady(ctx, corev1.ConditionTrue, reasonReady, messageReady)
}

// stopKubelet: the host went down; the node lifecycle controller marks
// the Node Unknown once its kubelet is silent.
func (s *server) stopKubelet(ctx context.Context, why string) {
	if !s.running {
		return
	}
	s.running = false
	s.setSnapshot()
	s.fleet.opts.Log.Debugf("server %s: %s; node %s stops", s.spec.Name, why, s.hostname)
	s.setReady(ctx, corev1.ConditionUnknown, reasonUnknown, messageStopped)
}

func (s *server) heartbeat(ctx context.Context) {
	if s.running {
		s.setReady(ctx, corev1.ConditionTrue, reasonReady, messageReady)
	}
}

// setReady posts the Ready condition; a kubelet's post (True) is a
// heartbeat too.
func (s *server) setReady(ctx context.Context, status corev1.ConditionStatus, reason, message string) {
	nodes := s.fleet.opts.Kube.CoreV1().Nodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := nodes.Get(ctx, s.hostname, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		found := false
		for i := range node.Status.Conditions {
			c := &node.Status.Conditions[i]
			if c.Type != corev1.NodeReady {
				continue
			}
			found = true
			if c.Status != status {
				c.LastTransitionTime = now
			}
			c.Status, c.Reason, c.Message = status, reason, message
			if status != corev1.ConditionUnknown {
				c.LastHeartbeatTime = now
			}
		}
		if !found {
			node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: status,
				Reason: reason, Message: message, LastHeartbeatTime: now, LastTransitionTime: now})
		}
		_, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		s.fleet.opts.Log.Debugf("server %s: node %s: %v", s.spec.Name, s.hostname, fmt.Errorf("posting Ready=%s: %w", status, err))
	}
}
