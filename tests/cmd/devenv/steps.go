package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// say announces a step, in bold on the terminal.
func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "\033[1m==> %s\033[0m\n", fmt.Sprintf(format, args...))
}

// progressEvery is how often a long step says it is still going (a Go or
// cluster binary build prints nothing until it finishes).
const progressEvery = 30 * time.Second

// timed runs a step that can take minutes, says every progressEvery that
// it is still going, and how long it took.
func timed(what string, step func() error) error {
	start := time.Now()
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				fmt.Fprintf(os.Stderr, "    ... %s: %ds so far\n", what, int(time.Since(start).Seconds()))
			}
		}
	}()
	err := step()
	close(done)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	fmt.Fprintf(os.Stderr, "    %s: done in %ds\n", what, int(time.Since(start).Seconds()))
	return nil
}

// errNotYet is what a condition of waitFor answers while it does not hold
// and nothing is wrong.
var errNotYet = errors.New("not yet")

// waitFor polls cond every interval until it holds (nil), fails for good
// (any error but errNotYet), ctx ends or timeout passes.
func waitFor(parent context.Context, timeout, interval time.Duration, what string, cond func() error) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if !errors.Is(err, errNotYet) {
			return fmt.Errorf("%s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			if parent.Err() != nil {
				return fmt.Errorf("%s: %w", what, parent.Err())
			}
			return fmt.Errorf("%s: not within %s", what, timeout)
		case <-tick.C:
		}
	}
}
