package joinagent

import (
	"context"
	"sync"
)

// queue runs the Node writes that notifications cause one at a time, in
// notification order, on its own goroutine. The simulator delivers
// notifications before it answers the request that caused them, so a write to
// the apiserver there would make Metal API calls wait on Kubernetes (or hang
// with it); and the order keeps a reinstall's Ready=Unknown ahead of the Ready
// the new install posts.
type queue struct {
	mu    sync.Mutex
	items []func(context.Context)
	wake  chan struct{}
}

func newQueue() *queue { return &queue{wake: make(chan struct{}, 1)} }

// push never blocks: notifications must not wait on the apiserver.
func (q *queue) push(fn func(context.Context)) {
	q.mu.Lock()
	q.items = append(q.items, fn)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *queue) pop() func(context.Context) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return nil
	}
	fn := q.items[0]
	q.items[0] = nil
	q.items = q.items[1:]
	return fn
}

// run works until ctx ends; what is still queued then is dropped, as the
// agent's servers are gone with it.
func (q *queue) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		}
		for fn := q.pop(); fn != nil && ctx.Err() == nil; fn = q.pop() {
			fn(ctx)
		}
	}
}
