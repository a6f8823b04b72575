package chaos

import (
	"context"
	"time"
)

// playSteps runs a side plan's steps, each after its delay, until they end
// and stop closes (or ctx ends), calling tick every period meanwhile (the
// world playing its kubelets and people between the steps).
func playSteps[S any](ctx context.Context, stop <-chan struct{}, steps []S, delay func(S) time.Duration, period time.Duration,
	tick func(), do func(S)) {
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	next := time.After(0)
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-ticker.C:
			tick()
		case <-next:
			if len(steps) == 0 {
				next = nil
				continue
			}
			s := steps[0]
			steps = steps[1:]
			do(s)
			if len(steps) > 0 {
				next = time.After(delay(steps[0]))
			}
		}
	}
}
