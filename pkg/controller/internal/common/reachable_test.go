package common

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"
)

// fastBackoff reaches its cap at once, as StartupBackoff does after a few
// seconds: the wait must go on past it.
var fastBackoff = wait.Backoff{Duration: time.Millisecond, Factor: 2, Cap: 2 * time.Millisecond, Steps: 1 << 30}

func TestUntilReachableRetriesUntilTheAPIAnswers(t *testing.T) {
	calls := 0
	err := UntilReachable(context.Background(), fastBackoff, func(context.Context) error {
		calls++
		if calls < 20 {
			return errors.New("connection refused")
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 20, calls)
}

func TestUntilReachableEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := UntilReachable(ctx, fastBackoff, func(context.Context) error {
		calls++
		if calls == 2 {
			cancel()
		}
		return errors.New("connection refused")
	})
	require.Error(t, err)
	assert.ErrorContains(t, err, "connection refused", "the last failure is named")
	assert.ErrorIs(t, err, context.Canceled)
}
