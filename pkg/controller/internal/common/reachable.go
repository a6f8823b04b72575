package common

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/util/wait"
)

// StartupBackoff paces the start-up's first calls while the apiserver is
// unreachable: quickly at first, then every 10 seconds.
var StartupBackoff = wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Jitter: 0.1, Cap: 10 * time.Second, Steps: math.MaxInt32}

// UntilReachable runs step until it succeeds or ctx ends. A pod starting
// while the apiserver restarts (an upgrade, a control-plane node reboot)
// waits for it here, unready, instead of exiting into a crash loop. The
// steps are the start-up's reads, with no side effects to undo.
func UntilReachable(ctx context.Context, backoff wait.Backoff, step func(ctx context.Context) error) error {
	// A manual loop, not wait.ExponentialBackoff: that one stops for good
	// once the delay reaches Cap, and this must wait as long as it takes.
	for {
		last := step(ctx)
		if last == nil {
			return nil
		}
		logrus.Warnf("waiting for the Kubernetes API: %v", last)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), last)
		case <-time.After(backoff.Step()):
		}
	}
}
