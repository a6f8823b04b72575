package common

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// writtenTTL is how long the addon's own write of an object may stand in
// for the cache's copy: far longer than a watch event takes to arrive.
const writtenTTL = time.Minute

// Writes lets a chain read its own writes. An object's cached copy trails
// the write that changed it by a watch event, and a handler run in between
// (another trigger of the same object was queued) would act on the old
// copy: patch a Node's labels again, or poll a BMC again and report the
// same transition twice. Every write a chain makes is recorded here, and
// an object read here is the newer of the cache's copy and the last one
// written.
type Writes[T interface {
	runtime.Object
	metav1.Object
}] struct {
	mutations toolscache.MutationCache
}

// NewWrites reads through to a cache's store.
func NewWrites[T interface {
	runtime.Object
	metav1.Object
}](store toolscache.Store) *Writes[T] {
	return &Writes[T]{mutations: toolscache.NewIntegerResourceVersionMutationCache(klog.Background(), store, nil, writtenTTL, false)}
}

// Latest is obj, or the addon's own later write of it.
func (w *Writes[T]) Latest(obj T) T {
	if w == nil || isNil(obj) {
		return obj
	}
	key, err := toolscache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return obj
	}
	got, ok, err := w.mutations.GetByKey(key)
	if err != nil || !ok {
		return obj
	}
	if newer, is := got.(T); is {
		return newer
	}
	return obj
}

// Wrote records the object a write returned.
func (w *Writes[T]) Wrote(obj T) {
	if w != nil && !isNil(obj) {
		w.mutations.Mutation(obj)
	}
}

// isNil says whether a pointer type's value is nil; any(obj) == nil is
// never true for a typed nil.
func isNil[T any](obj T) bool {
	var zero T
	return any(obj) == any(zero)
}

// NodeWrites are the chains' own writes of Nodes.
type NodeWrites = Writes[*corev1.Node]

// NewNodeWrites reads through to the Node cache's store.
func NewNodeWrites(store toolscache.Store) *NodeWrites { return NewWrites[*corev1.Node](store) }
