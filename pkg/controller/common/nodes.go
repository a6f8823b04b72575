package common

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// writtenNodeTTL is how long the addon's own write of a Node may stand in
// for the cache's copy: far longer than a watch event takes to arrive.
const writtenNodeTTL = time.Minute

// NodeWrites lets the chains that patch Nodes read their own writes. A
// Node's cached copy trails the patch that changed it by a watch event, and
// a Node changes often (the kubelet's status, several chains' patches): a
// handler run in between would find its labels missing and patch them
// again. Every patch a chain makes is recorded here, and a Node read here
// is the newer of the cache's copy and the last one written.
type NodeWrites struct {
	mutations toolscache.MutationCache
}

// NewNodeWrites reads through to the Node cache's store.
func NewNodeWrites(store toolscache.Store) *NodeWrites {
	return &NodeWrites{mutations: toolscache.NewIntegerResourceVersionMutationCache(klog.Background(), store, nil, writtenNodeTTL, false)}
}

// Latest is node, or the addon's own later write of it.
func (w *NodeWrites) Latest(node *corev1.Node) *corev1.Node {
	if w == nil || node == nil {
		return node
	}
	obj, ok, err := w.mutations.GetByKey(node.Name)
	if err != nil || !ok {
		return node
	}
	if newer, is := obj.(*corev1.Node); is {
		return newer
	}
	return node
}

// Wrote records the Node a write returned.
func (w *NodeWrites) Wrote(node *corev1.Node) {
	if w != nil && node != nil {
		w.mutations.Mutation(node)
	}
}
