package common

import "time"

// RelatedDelay is how long an object waits after a change of something it
// depends on (a pool's Instances, an Instance's Node) before it runs again:
// such changes come in bursts (a node's registration, status and labels; a
// pool's servers converging together), and one run sees them all.
const RelatedDelay = time.Second

// delayedEnqueuer is what a generated cluster-scoped controller offers.
type delayedEnqueuer interface {
	EnqueueAfter(name string, duration time.Duration)
}

// After adapts a controller for relatedresource watches so that a related
// change re-runs the object after delay, whatever happened to it before.
// The controller's own Enqueue goes through the workqueue's rate limiter
// (lasso's AddRateLimited): each call waits out, and lengthens, the item's
// failure backoff. After an apiserver outage a pool's backoff had grown to
// minutes and its Instances' changes could not bring its next run forward
// (seen in the fault campaign). A delay still lets a burst of changes share
// one run: the workqueue keeps an item's earliest due time. Failures still
// back off: the handler's own error requeues as before.
func After(c delayedEnqueuer, delay time.Duration) RelatedEnqueuer {
	return RelatedEnqueuer{c: c, delay: delay}
}

// RelatedEnqueuer is a relatedresource.ClusterScopedEnqueuer.
type RelatedEnqueuer struct {
	c     delayedEnqueuer
	delay time.Duration
}

// Enqueue adds name to the workqueue after the delay, outside the rate
// limiter.
func (e RelatedEnqueuer) Enqueue(name string) { e.c.EnqueueAfter(name, e.delay) }

// namespacedEnqueuer is what a generated namespaced controller offers.
type namespacedEnqueuer interface {
	EnqueueAfter(namespace, name string, duration time.Duration)
}

// AfterNamespaced is After for a namespaced kind.
func AfterNamespaced(c namespacedEnqueuer, delay time.Duration) NamespacedRelatedEnqueuer {
	return NamespacedRelatedEnqueuer{c: c, delay: delay}
}

// NamespacedRelatedEnqueuer is a relatedresource.Enqueuer.
type NamespacedRelatedEnqueuer struct {
	c     namespacedEnqueuer
	delay time.Duration
}

// Enqueue adds namespace/name to the workqueue after the delay, outside the
// rate limiter.
func (e NamespacedRelatedEnqueuer) Enqueue(namespace, name string) {
	e.c.EnqueueAfter(namespace, name, e.delay)
}
