package joinagent

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQueueRunsInPushOrder(t *testing.T) {
	q := newQueue()
	var mu sync.Mutex
	var got []int
	// Pushing before run starts must neither block nor lose work.
	for i := range 100 {
		q.push(func(context.Context) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, i)
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		q.run(ctx)
		close(done)
	}()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 100
	}, 5*time.Second, time.Millisecond)
	for i, v := range got {
		assert.Equal(t, i, v)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
}

func TestRedact(t *testing.T) {
	for name, tc := range map[string]struct {
		text    string
		secrets []string
		want    string
	}{
		"masks every secret":    {"a tok1 b tok2 tok1", []string{"tok1", "tok2"}, "a <redacted> b <redacted> <redacted>"},
		"ignores empty secrets": {"nothing here", []string{""}, "nothing here"},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, redact(tc.text, tc.secrets...))
		})
	}
}
