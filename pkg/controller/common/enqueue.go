package common

import "time"

// delayedEnqueuer is what a generated cluster-scoped controller offers.
type delayedEnqueuer interface {
	EnqueueAfter(name string, duration time.Duration)
}

// Immediate adapts a controller for relatedresource watches so that a
// related change re-runs the object at once. The controller's own Enqueue
// goes through the workqueue's rate limiter (lasso's AddRateLimited): each
// call waits out, and lengthens, the item's failure backoff. After an
// apiserver outage a pool's backoff had grown to minutes and its Instances'
// changes could not bring its next run forward (fault campaign, seed 146).
// Failures still back off: the handler's own error requeues as before.
func Immediate(c delayedEnqueuer) ImmediateEnqueuer { return ImmediateEnqueuer{c: c} }

// ImmediateEnqueuer is a relatedresource.ClusterScopedEnqueuer.
type ImmediateEnqueuer struct{ c delayedEnqueuer }

// Enqueue adds name to the workqueue now, outside the rate limiter.
func (e ImmediateEnqueuer) Enqueue(name string) { e.c.EnqueueAfter(name, 0) }
